"""The Train page: page.py form and live charts, runs.py past runs and their completions."""
