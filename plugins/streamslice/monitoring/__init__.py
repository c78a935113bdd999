"""What a run tells the people and systems that watch it, as pure rules and names:
alert rules over a run's manifest (``alerts``), the figures each run reports
(``metrics``) and dataset names for lineage (``lineage``). Delivery is the Airflow
glue's (``airflow/alerting.py``, ``airflow/metrics.py``, ``airflow/lineage.py``)."""
