"""Pure computation for MVP Studio: video decoding, frame store, embedders, puzzle synthesis,
the puzzle record, rewards, the policy and GRPO. Nothing here imports `db` or `app`."""
