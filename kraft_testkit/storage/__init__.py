"""What a Kafka node leaves in its directories (meta.properties, bootstrap files, layout)."""
