"""The streamslice read job in a checkout: the launcher spark-submit runs
(``streamslice.spark.bounded_read`` is the job; an installed package writes this launcher with
``streamslice package DIR``). Runnable as a plain script too, which reads on local[*]:

  spark-submit --master spark://host:7077 --py-files streamslice.zip jobs/bounded_read.py \
      --plan plan.json --staging file:///lake/_streamslice/pipeline=p/staging/batch=00000001/try1 \
      --properties client.json
"""
import sys

from streamslice.spark.bounded_read import main

if __name__ == "__main__":
    sys.exit(main())
