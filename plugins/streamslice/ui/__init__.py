"""The Streamslice page in the Airflow UI, without Airflow: what a pipeline's runs mean
(``model``), drawn as SVG (``svg``) on server-rendered HTML (``pages``). The Airflow glue
(``streamslice.airflow.ui``) fetches the rows from Airflow's database and checks access."""
