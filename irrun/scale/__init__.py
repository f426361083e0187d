"""Scale-out: many inputs or models in local processes or on Dask, wrapping the Model."""
