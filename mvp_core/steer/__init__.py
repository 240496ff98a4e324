"""Energy steering (docs/steer.md): per-layer energy models over decoder hidden states, and hooks
that move the state down the energy at inference."""
