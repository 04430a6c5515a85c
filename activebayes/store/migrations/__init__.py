"""Alembic migrations of the store schema (env.py, script.py.mako, versions/).

Run through `PoolStore`, which upgrades an older database automatically on open and refuses a
newer one. To add a revision after changing `activebayes/store/models.py`::

    from alembic import command
    from activebayes.store.schema_version import alembic_config
    command.revision(alembic_config(), message="add x", rev_id="0002")

then write its upgrade()/downgrade() by hand (autogenerate needs a database at head), and set
`schema_version.HEAD_REVISION` to its rev_id (an open at that revision skips Alembic).
"""
