//! Leader state: replica progress, the high watermark, and DescribeQuorum building.
