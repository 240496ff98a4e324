"""The Admin page: users (add, set role, set password)."""
