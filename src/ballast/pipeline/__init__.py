"""The load-data pipeline: a Parquet history of what brokers report, and PySpark jobs that turn
it into time averages, split plans, synthetic histories and reports.

Layout: ``schema`` (the history's tables), ``history`` (records and the pyarrow writer/reader),
``sparkio`` (the Spark reader/writer), ``importer`` (Pulsar ``/loadbalance`` dumps),
``session`` (building a SparkSession), ``transforms`` (pure ``DataFrame -> DataFrame``
functions) and ``jobs`` (thin read -> transform -> write programs, one per job).
"""
