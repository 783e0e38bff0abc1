"""The word lists the coding suite draws its values from: large, so that no value can be guessed.

They are part of the suite: changing a list, even by adding a word, changes
the cases every seed gives.
"""

from __future__ import annotations


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


HEADER_LABELS = ("SPDX-FileContributor", "Project-Code", "Owner", "Maintained-By", "Cost-Center", "Review-Group")
ADJECTIVES = _words(
    "amber azure bold brisk calm cedar civic coral crisp dusky eager early fable fern fleet frost gentle "
    "glad golden grand hazel humble ivory jade keen lunar maple mellow misty noble ochre opal plain quiet "
    "rapid regal rustic sable silent slate solar stark sunny swift tawny tidal vivid wild zesty"
)
ANIMALS = _words(
    "badger bison condor coyote crane dingo egret falcon ferret gannet gecko heron ibex impala jackal "
    "kestrel koala lemur lynx magpie marmot marten merlin moose newt ocelot oriole osprey otter panda "
    "petrel puffin quokka raven robin sable salmon shrike skink stoat swift tapir tern thrush viper "
    "walrus wombat wren yak"
)
NOUNS = _words(
    "invoice ledger order parcel ticket report budget payment refund account voucher receipt shipment "
    "customer vendor basket coupon tariff quota batch route sensor reading metric alert ballot lesson "
    "course patient booking rental claim policy permit asset device tenant lease credit"
)
VERBS = _words("build load export import merge sync scan audit rank price index score check group tally render")
VARIANTS = _words("fast safe raw cached strict lazy legacy batched streamed pooled chunked eager")
DECISIONS = {
    "serialize records to JSON": ("orjson", "ujson", "msgspec", "simplejson", "rapidjson"),
    "make HTTP requests": ("httpx", "requests", "aiohttp", "urllib3", "pycurl"),
    "parse dates": ("pendulum", "arrow", "dateutil", "ciso8601", "iso8601"),
    "validate settings": ("pydantic", "attrs", "marshmallow", "cerberus", "voluptuous"),
    "compress archives": ("zstandard", "lz4", "brotli", "snappy", "blosc"),
    "hash passwords": ("argon2", "bcrypt", "passlib", "scrypt", "nacl"),
    "render templates": ("jinja2", "mako", "chevron", "genshi", "airspeed"),
    "retry flaky calls": ("tenacity", "backoff", "retrying", "stamina", "opnieuw"),
    "log structured events": ("structlog", "loguru", "logbook", "eliot", "twiggy"),
}
REASONS = (
    "it was twice as fast on the nightly batch",
    "the other one dropped timezone offsets",
    "the other one leaked file handles under load",
    "its licence suits the customer contract",
    "the other one is unmaintained since 2021",
    "it is the only one that passed the security review",
    "the other one broke on Python 3.12",
    "it kept memory flat on large inputs",
)
FAILURES = (
    "it deadlocked when two workers ran at once",
    "it silently skipped the last row",
    "it read the whole file into memory and crashed the container",
    "it returned stale rows from its cache",
    "it mangled non-ASCII names",
    "it took nine minutes on the real data",
)
