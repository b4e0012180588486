"""Transactions at the gateway: the transaction coordinator (state in ``__transaction_state``),
its markers in the data logs, and what a ``read_committed`` reader sees (see
:mod:`.coordinator`)."""
