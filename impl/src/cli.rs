//! The `kraft` command line: format, node, describe, add-voter, remove-voter, cluster.
