"""Topic names that collide once '.' is read as '_', kept between creations.

Kafka's ``ReplicationControlManager`` keeps ``topicsWithCollisionChars`` (normalized name ->
the topic names with a '.' or a '_' that normalize to it) up to date as topics come and go, so
``validateNewTopicNames`` looks one name up instead of walking every topic. Here the index of
the last topics image asked about is kept and carried forward over the topics the deltas since
touched (:func:`~kraft_testkit.metadata.changed_topics`); when that is unknown it is built
again from every topic. Either way it is what the image holds.
"""

from __future__ import annotations

from typing import Any

from ..metadata import MetadataImage, changed_topics


def collision_key(name: str) -> str:
    """Metrics replace '.' by '_', so Kafka refuses names that differ only there."""
    return name.replace(".", "_")


class CollisionIndex:
    """Collision key -> the topic names with a '.' or '_' that have it (of one topics image)."""

    __slots__ = ("names", "topics")

    def __init__(self, topics: Any) -> None:
        self.topics = topics
        self.names: dict[str, set[str]] = {}
        for name in topics.topics_by_name:
            self._add(name)

    def _add(self, name: str) -> None:
        if "." in name or "_" in name:
            self.names.setdefault(collision_key(name), set()).add(name)

    def _drop(self, name: str) -> None:
        key = collision_key(name)
        names = self.names.get(key)
        if names is not None:
            names.discard(name)
            if not names:
                del self.names[key]

    def advance(self, topics: Any) -> bool:
        """Move to ``topics``; False when what changed since is unknown."""
        touched = changed_topics(self.topics, topics)
        if touched is None:
            return False
        was, now = self.topics.topics_by_id, topics.topics_by_id
        # every name that went first, then every name there now (a name freed by one topic
        # and taken by another in the same steps stays)
        for topic_id in touched:
            old = was.get(topic_id)
            if old is not None:
                self._drop(old.name)
        for topic_id in touched:
            new = now.get(topic_id)
            if new is not None:
                self._add(new.name)
        self.topics = topics
        return True

    def first(self, name: str) -> str | None:
        """The first (in name order) existing topic ``name`` collides with."""
        names = self.names.get(collision_key(name))
        return min(names) if names else None


_LAST: list[CollisionIndex] = []  # the index last asked for (one: the active controller's)


def collision_index(image: MetadataImage) -> CollisionIndex:
    """The index of ``image``'s topics, carried forward from the last one asked for."""
    topics = image.topics
    if _LAST:
        index = _LAST[0]
        if index.topics is topics or index.advance(topics):
            return index
    index = CollisionIndex(topics)
    _LAST[:] = [index]
    return index
