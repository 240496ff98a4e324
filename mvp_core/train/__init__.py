"""GRPO post-training of a VideoLLM on curated MVP puzzles (docs/ARCHITECTURE.md, "The method" and "Run directory"): config, loss,
loop, run directory, checkpoints and torchrun support. Entry point: `loop.train(config)`."""
