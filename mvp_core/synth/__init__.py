"""Puzzle synthesis: embedders, the per-video plan (keyframes, mask, distractors), the job, workers, Ray, audit."""
