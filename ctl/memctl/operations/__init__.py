"""Day-2 operations on a provisioned project: `doctor`'s checks, `status`, the logs, the
containers, the maintenance job (its passes, LLM judge, compaction and report) and opening a
project's stores to look memory up."""
