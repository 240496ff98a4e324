"""GRPO post-training of a VideoLLM on curated MVP puzzles (DESIGN §1.7, §3): config, loss,
loop, run directory, checkpoints and torchrun support. Entry point: `loop.train(config)`."""
