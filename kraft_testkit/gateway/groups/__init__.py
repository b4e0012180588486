"""Consumer groups at the gateway: the classic protocol's coordinator, its state in
``__consumer_offsets`` (see :mod:`.coordinator`)."""
