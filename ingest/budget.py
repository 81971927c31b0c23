"""The default memory budget of one ingest, apart from the pipeline so that the command line's options can name it
without loading Polars or the compiled kernels."""

#: Default memory budget of one ingest (bytes): a capture whose working set is estimated above it is
#: analysed in connection groups with its packet columns and output tables on disk.
DEFAULT_MEMORY_BUDGET = 1 << 30
