"""kafka-python's admin describe_metadata_quorum() bootstrapped to one address.

Usage: describe_quorum.py HOST:PORT
Prints one line: leader=<id> epoch=<epoch> hw=<high watermark> voters=<ids, sorted> error=<partition error or
None>; exits 1 with the exception on stderr if the call raised.
"""
import sys

from kafka import KafkaAdminClient


def main():
    admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=10000)
    try:
        quorum = admin.describe_metadata_quorum()
    finally:
        admin.close()
    partition = quorum["topics"][0]["partitions"][0]
    voters = sorted(v["replica_id"] for v in partition["current_voters"])
    print(
        "leader=%s epoch=%s hw=%s voters=%s error=%s"
        % (
            partition["leader_id"],
            partition["leader_epoch"],
            partition["high_watermark"],
            ",".join(str(v) for v in voters),
            partition["error"],
        )
    )


if __name__ == "__main__":
    main()
