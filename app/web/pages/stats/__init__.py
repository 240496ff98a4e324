"""The Stats page: page.py analytics charts and tables, eval.py eval results per checkpoint (also shown on Rollouts)."""
