"""Airflow glue: hooks, the checkpoint store on asset state, task callables, the DAG factory."""
