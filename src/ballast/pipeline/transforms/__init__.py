"""Pure ``DataFrame -> DataFrame`` transforms (STYLE 12): no session, no paths, no
environment. Each takes history tables (as :mod:`ballast.pipeline.schema` defines them) and
small frozen configs, and returns a DataFrame; the jobs read, call them and write."""
