"""rtf on Spark: replaying a DBpedia dump, partitioning queries across workers.

`replay` (the job: read, group by subject, filter on the workers, write),
`dumps` (finding dump files), `workers` (one engine per Python worker,
built from a saved index), `hadoopfs` (the output folder through Hadoop's
file system), `partition` (query groups: routing, containment, merging).
The driver is `spark/dbpedia_eval.py` (docs/spark.md).
"""
