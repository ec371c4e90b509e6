"""The load-data pipeline: a Parquet history of what brokers report, and PySpark jobs that turn
it into time averages, split plans, synthetic histories and reports.

Layout: ``schema`` (the history's tables), ``history`` (records and the pyarrow writer/reader),
``sparkio`` (the Spark reader/writer), ``importer`` (Pulsar ``/loadbalance`` dumps),
``session`` (building a SparkSession), ``synthetic_spec`` (what a synthetic history looks
like), ``report_render`` (charts and the HTML page), ``transforms`` (pure
``DataFrame -> DataFrame`` functions) and ``jobs`` (thin read -> transform -> write programs,
one per job). Only ``session``, ``sparkio`` and the jobs touch Spark sessions or paths.
"""
