"""The KIP-848 consumer group protocol at the gateway's group coordinator (Kafka 4.2.1's
``GroupMetadataManager`` consumer paths, ``ConsumerGroup``, ``CurrentAssignmentBuilder``, the
server-side assignors), its state in ``__consumer_offsets`` as Kafka's records."""
