"""The activebayes command line (installed as the import package `activebayes_cli`)."""
