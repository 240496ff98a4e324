"""The Rollouts page: page.py layout, view.py HTML, eval.py the evaluate panel, steer.py the steering comparison, api.py + rollouts.js the view API and its client."""
