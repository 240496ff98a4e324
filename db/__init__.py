"""Persistence for MVP Studio: SQLAlchemy 2 models and sessions, migrations, DuckDB analytics."""
