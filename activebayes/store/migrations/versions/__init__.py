"""Alembic revision scripts, one file per schema version, applied in order."""
