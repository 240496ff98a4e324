"""The model side: load a VideoLLM, tiny models, prompts, rollouts and evaluation."""
