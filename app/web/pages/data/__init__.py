"""The Data page (/datasets): page.py layout, ops.py the work, api.py the export download."""
