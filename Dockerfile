# One image for the Airflow components and the Spark master/worker, so the Spark that runs the
# job is the Spark the driver was built against (pyspark's own jars and spark-class).
FROM apache/airflow:3.3.2-python3.11

USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64

USER airflow
COPY --chown=airflow requirements.txt constraints.txt pyproject.toml /opt/streamslice/
COPY --chown=airflow plugins /opt/streamslice/plugins
COPY --chown=airflow jobs /opt/streamslice/jobs
COPY --chown=airflow devtools /opt/streamslice/devtools
RUN pip install --no-cache-dir -r /opt/streamslice/requirements.txt \
        -c /opt/streamslice/constraints.txt psycopg2-binary \
 && pip install --no-cache-dir --no-deps -e /opt/streamslice
WORKDIR /opt/streamslice
