"""factory-boy factories for the memory store (tests write through these or through services)."""

from __future__ import annotations

import factory

from memory.models import ApiKey, Chunk, Message, Subject, Tenant, TreeVersion
from memory.services.tree import Source, tree_apply_ops


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"tenant-{n}")
    review_special_tier = True
    mass_delete_threshold = 3
    chunk_pairs = 3
    gate_lenient = False


class ApiKeyFactory(factory.django.DjangoModelFactory):
    """``ApiKeyFactory()`` returns the ApiKey; its one-time raw key is on ``key.raw``.

    ``ApiKeyFactory.create_raw(...)`` returns ``(api_key, raw_key)``.
    """

    class Meta:
        model = ApiKey

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"key-{n}")
    scopes = factory.LazyFunction(lambda: ["ingest", "read"])

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        raw, prefix, hashed = ApiKey.generate()
        kwargs.setdefault("prefix", prefix)
        kwargs.setdefault("hashed", hashed)
        obj = super()._create(model_class, *args, **kwargs)
        obj.raw = raw if kwargs["hashed"] == hashed else None
        return obj

    @classmethod
    def create_raw(cls, **kwargs) -> tuple[ApiKey, str]:
        key = cls.create(**kwargs)
        return key, key.raw


class SubjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Subject

    tenant = factory.SubFactory(TenantFactory)
    external_id = factory.Sequence(lambda n: f"user-{n}")
    schema_id = "personatree-default"
    schema_version = 1


class MessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Message

    subject = factory.SubFactory(SubjectFactory)
    seq = factory.Sequence(lambda n: n + 1)
    role = "user"
    content = factory.Faker("sentence")


class ChunkFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Chunk

    subject = factory.SubFactory(SubjectFactory)
    chunk_key = factory.Sequence(lambda n: f"{n:064x}")
    start_seq = factory.Sequence(lambda n: n * 6 + 1)
    end_seq = factory.LazyAttribute(lambda o: o.start_seq + 5)
    status = Chunk.Status.PENDING


class TreeVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TreeVersion

    subject = factory.SubFactory(SubjectFactory)
    number = factory.Sequence(lambda n: n + 1)
    snapshot = factory.LazyFunction(dict)
    created_by = TreeVersion.CreatedBy.IMPORT


def chunk_source(chunk: Chunk) -> Source:
    """The ``Source`` of ops read from ``chunk``: its id and message span."""
    return Source(chunk.pk, chunk.start_seq, chunk.end_seq)


def model_apply(subject, ops, *, actor, chunk=None, base=None, parse_errors=()):
    """``tree_apply_ops`` as the dispatcher calls it for a chunk the model read: ``ops`` by ``actor``
    from ``chunk`` (a new one by default), on the subject's head version unless ``base`` is given."""
    chunk = chunk if chunk is not None else ChunkFactory(subject=subject)
    return tree_apply_ops(
        subject=subject,
        base_version=subject.head_version if base is None else base,
        ops=ops,
        actor=actor,
        source=chunk_source(chunk),
        parse_errors=parse_errors,
    )
