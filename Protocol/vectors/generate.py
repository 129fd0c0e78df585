#!/usr/bin/env python3
"""Generate the Nearby wire protocol version 2 test vectors: frames.json and states.json.

This is an independent encoder, written from Protocol/PROTOCOL.md alone (not from the Swift
codec), so that the specification and the Swift implementation cross-check each other. It is
used only to produce the checked-in vector files; CI does not run it.

The frames are those that travel inside records (PROTOCOL.md section 4), and HELLO as it is
carried in a handshake payload (3.6). The identities, the receipt signature and the envelopes
are taken from crypto.json (the cryptography vectors, recomputed by check_crypto.py), so that
the frames here carry real keys that own their ids, a real signature and real envelopes.

    python3 Protocol/vectors/generate.py   # rewrites frames.json and states.json
    python3 Protocol/vectors/check.py      # independent decoder; verifies both files

Python 3.8+, standard library only. The output is deterministic (no randomness, keys in a
fixed order, 2-space indentation), so regenerating an unchanged script changes nothing.
"""

import hashlib
import json
import os
import struct

PROTOCOL_VERSION = 2
MAX_FRAME_LENGTH = 2_097_152  # section 3.15
MAX_SEALED_BODY = 1_245_330   # section 4.5: an envelope of 1 MiB to 4 096 recipients
MAGIC = b"NRBY"               # 4E 52 42 59, section 4.1
U64_MAX = 2**64 - 1
HERE = os.path.dirname(os.path.abspath(__file__))

TYPES = {                     # section 4
    "HELLO": 0x01, "INVITE": 0x02, "ACCEPT": 0x03, "DECLINE": 0x04, "MESSAGE": 0x05,
    "DELIVERED": 0x06, "PING": 0x07, "PONG": 0x08, "GOODBYE": 0x09, "ERROR": 0x0A,
    "ROSTER": 0x0B, "UNDELIVERABLE": 0x0C, "VERIFY": 0x0D, "RESUME": 0x0E,
    "FILE": 0x0F,
}
FILE_KINDS = {                # section 13.2
    "OFFER": 1, "ACCEPT": 2, "CHUNK": 3, "END": 4, "ACK": 5, "RESEND": 6, "VERIFIED": 7,
    "CANCEL": 8,
}
MAX_FILE_FRAME = 1_048_576    # section 13.2: a FILE frame fits an envelope's body
MAX_CHUNK = 524_288

with open(os.path.join(HERE, "crypto.json"), encoding="utf-8") as _f:
    CRYPTO = json.load(_f)
KEYS = {e["name"]: bytes.fromhex(e["publicKey"]) for e in CRYPTO["identities"]}
IDS = {e["name"]: bytes.fromhex(e["peerID"]) for e in CRYPTO["identities"]}

# Peer ids used throughout (section 2.2). ALICE, BOB, CAROL and MALLORY are the identities of
# crypto.json: their ids are derived from their keys. DAVE is the smallest valid id and MAXID
# the largest: no known key derives them, which the frame layer does not care about.
ALICE, BOB, CAROL, MALLORY = IDS["alice"], IDS["bob"], IDS["carol"], IDS["mallory"]
KEY = {ALICE: KEYS["alice"], BOB: KEYS["bob"], CAROL: KEYS["carol"], MALLORY: KEYS["mallory"]}
DAVE = bytes.fromhex("00000000000000000000000000000001")
MAXID = b"\xff" * 16
ZERO = bytes(16)


# --- primitive encoders (section 2) ------------------------------------------------------

def u8(v): return struct.pack(">B", v)
def u16(v): return struct.pack(">H", v)
def u32(v): return struct.pack(">I", v)
def u64(v): return struct.pack(">Q", v)


def raw(s):
    """A string field's bytes: str is UTF-8 encoded, bytes are used as-is (invalid input)."""
    return s.encode("utf-8") if isinstance(s, str) else bytes(s)


def str8(s): b = raw(s); return u8(len(b)) + b
def str16(s): b = raw(s); return u16(len(b)) + b
def bytes16(b): return u16(len(b)) + b
def bytes32(b): return u32(len(b)) + b


def frame(type_code, payload):
    """length u32 (type byte + payload), type u8, payload (section 3)."""
    return u32(1 + len(payload)) + u8(type_code) + payload


# --- payload builders (section 4); arguments may be out of range to build invalid input --

def hello(name="alice", min_v=2, max_v=2, caps=0, peer=ALICE, magic=MAGIC):
    return magic + u8(min_v) + u8(max_v) + u32(caps) + peer + str8(name)


def invite(inv_id=1, timeout=30_000, context=b""):
    return u64(inv_id) + u32(timeout) + bytes16(context)


def message(msg_id=1, sender=ALICE, ts=0, hops=8, recipients=(), body=b"", count=None):
    count = len(recipients) if count is None else count
    return (u64(msg_id) + sender + u64(ts) + u8(hops) + u16(count) + b"".join(recipients)
            + bytes32(body))


def delivered(origin=ALICE, recipient=BOB, ids=(1,), count=None, signature=b""):
    count = len(ids) if count is None else count
    return origin + recipient + u16(count) + b"".join(u64(i) for i in ids) + signature


def error(code=1, text=""):
    return u16(code) + str16(text)


def roster(kind=0, entries=(), count=None):
    """Entries are (peerID, hops, name) with the peer's own key, or (peerID, hops, name, key)."""
    count = len(entries) if count is None else count
    return u8(kind) + u16(count) + b"".join(
        e[0] + u8(e[1]) + str8(e[2]) + (e[3] if len(e) > 3 else KEY[e[0]]) for e in entries)


def undeliverable(origin=ALICE, msg_id=1, recipient=BOB, reason=1):
    return origin + u64(msg_id) + recipient + u8(reason)


def resume(session=1, flags=0, received=0, delivered=0):
    """Section 4.13: sessionID u64, flags u8, received u64, delivered u64."""
    return u64(session) + u8(flags) + u64(received) + u64(delivered)


def file_payload(f):
    """A FILE frame's payload (section 13.2) from its JSON-like dict."""
    kind = f["kind"]
    p = u8(FILE_KINDS[kind]) + f["transferID"]
    if kind == "OFFER":
        p += u16(len(f["files"])) + b"".join(
            u64(e["size"]) + u8(e["flags"]) + str16(e["name"]) for e in f["files"])
    elif kind == "ACCEPT":
        p += u16(len(f["files"])) + b"".join(
            u16(e["index"]) + u8(e["status"]) + u64(e["offset"]) for e in f["files"])
    elif kind == "CHUNK":
        p += u16(f["index"]) + u64(f["offset"]) + bytes32(f["data"])
    elif kind == "END":
        p += u16(f["index"]) + u64(f["size"]) + f["blake2b"]
    elif kind in ("ACK", "RESEND"):
        p += u16(f["index"]) + u64(f["offset"])
    elif kind == "VERIFIED":
        p += u16(f["index"])
    elif kind == "CANCEL":
        p += u8(f["reason"]) + str16(f["message"])
    return p


def encode_payload(f):
    """Payload of a frame given as a dict with native values (ints, bytes, str)."""
    t = f["type"]
    if t == "HELLO":
        return hello(f["name"], f["minVersion"], f["maxVersion"], f["capabilities"], f["peerID"])
    if t == "INVITE":
        return invite(f["invitationID"], f["timeoutMs"], f["context"])
    if t == "ACCEPT":
        return u64(f["invitationID"])
    if t == "DECLINE":
        return u64(f["invitationID"]) + u8(f["reason"])
    if t == "MESSAGE":
        return message(f["messageID"], f["sender"], f["timestamp"], f["hopLimit"],
                       f["recipients"], f["body"])
    if t == "DELIVERED":
        return delivered(f["origin"], f["recipient"], f["ids"], signature=f.get("signature", b""))
    if t in ("PING", "PONG"):
        return u64(f["nonce"])
    if t == "GOODBYE":
        return u8(f["reason"])
    if t == "ERROR":
        return error(f["code"], f["message"])
    if t == "ROSTER":
        return roster(f["kind"], [(e["peerID"], e["hops"], e["name"], e["publicKey"])
                                  for e in f["entries"]])
    if t == "UNDELIVERABLE":
        return undeliverable(f["origin"], f["messageID"], f["recipient"], f["reason"])
    if t == "VERIFY":
        return b""
    if t == "RESUME":
        return resume(f["sessionID"], f["flags"], f["received"], f["delivered"])
    if t == "FILE":
        return file_payload(f)
    raise ValueError(t)


def encode(f):
    return frame(TYPES[f["type"]], encode_payload(f))


# --- JSON form of a frame: u64 as decimal strings, ids and blobs as lowercase hex ---------

U64_FIELDS = {"invitationID", "messageID", "timestamp", "nonce", "ids", "sessionID", "received",
              "delivered", "size", "offset"}


def to_json(value, key=None):
    if isinstance(value, dict):
        return {k: to_json(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v, key) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, int) and key in U64_FIELDS:
        return str(value)
    return value


# --- valid vectors -------------------------------------------------------------------------

VALID = []


def valid(vector_name, description, /, **fields):
    """Add a valid vector; the frame type is the vector name's first word."""
    f = {"type": vector_name.split("-")[0].upper(), **fields}
    VALID.append({"name": vector_name, "description": description, "hex": encode(f).hex(),
                  "frame": to_json(f)})


def H(name, description, name_text, min_v=2, max_v=2, caps=0, peer=ALICE):
    valid(name, description, minVersion=min_v, maxVersion=max_v, capabilities=caps,
          peerID=peer, name=name_text)


def entry(peer, hops, name, key=None):
    """A ROSTER entry in JSON form; the key is the peer's own unless given."""
    return {"peerID": peer, "hops": hops, "name": name, "publicKey": KEY[peer] if key is None else key}


PATTERN_300 = bytes(i % 256 for i in range(300))

# HELLO is never a frame of the record stream: these are the frames each side's handshake
# carries as its payload (PROTOCOL.md 3.6), and what a version 1 peer sends in plaintext.
H("hello-basic", "The HELLO alice's handshake carries (the initiatorPayload of crypto.json): "
  "versions 2-2, no capabilities, alice's id.", "alice")
H("hello-bob", "The HELLO bob's handshake carries (the responderPayload of crypto.json).",
  "bob", peer=BOB)
H("hello-relay", "A relay: capability bit 1 (0x00000002) set.", "relay-1", caps=0x2, peer=BOB)
H("hello-resume", "A peer that resumes sessions (section 6.5): capability bit 2 "
  "(0x00000004) set.", "alice", caps=0x4)
H("hello-files", "A peer that takes part in file transfers: capability bit 3 (0x00000008, "
  "section 13).", "bob", caps=0x8, peer=BOB)
H("hello-reserved-bits", "Every capability bit set, including bit 0 (reserved: it was "
  "'encryption' in version 1), bit 2 (resume), bit 3 (files), bit 4 (federation) and the reserved bits 5-31: "
  "unknown bits are ignored, not rejected, and the decoded value keeps them as received.",
  "carol", caps=0xFFFFFFFF, peer=CAROL)
H("hello-unknown-bits", "Only reserved bits set (0x80000020).", "dave", caps=0x80000020,
  peer=DAVE)
H("hello-version-range-wide", "minVersion 1, maxVersion 255: valid; the range contains 2.",
  "wide", min_v=1, max_v=255)
H("hello-version-1", "A version 1 peer's HELLO (versions 1-1): a well-formed frame. Received "
  "in plaintext during the handshake it means the peer speaks version 1 (ERROR "
  "unsupportedVersion telling it to upgrade, PROTOCOL.md 3.3); as a handshake payload its "
  "range lacks 2 (ERROR unsupportedVersion). Both are session decisions, not decoding "
  "errors.", "old", min_v=1, max_v=1, peer=CAROL)
H("hello-future-versions-only", "minVersion 3, maxVersion 4: a well-formed HELLO (it decodes); "
  "as a handshake payload its range lacks 2, so the receiver sends ERROR unsupportedVersion, "
  "which is a session decision, not a decoding error.", "future", min_v=3, max_v=4, peer=BOB)
H("hello-name-1-byte", "Shortest name (1 byte) and the largest peer id.", "Z", peer=MAXID)
H("hello-name-63-ascii", "Longest name: 63 ASCII bytes; smallest valid peer id.", "n" * 63,
  peer=DAVE)
H("hello-name-63-cjk", "Longest name: 21 CJK characters = 63 UTF-8 bytes.", "日本語" * 7)
H("hello-name-63-emoji", "63 bytes: 15 four-byte emoji and 3 ASCII letters (names are "
  "limited in bytes, not characters).", "👋" * 15 + "abc")
H("hello-name-zoe", "Two-byte UTF-8 character in the name.", "Zoë", peer=CAROL)
H("hello-name-emoji", "Name with a space and a four-byte emoji.", "Ana 👋", peer=BOB)
H("hello-name-boundary-chars", "U+007E, U+00A0 and U+00FF are not control characters "
  "(the control ranges are U+0000-U+001F and U+007F-U+009F).", "~\u00a0\u00ff")

valid("invite-basic", "Default timeout 30000 ms, empty context.",
      invitationID=1, timeoutMs=30_000, context=b"")
valid("invite-min-timeout", "invitationID 0, minimum timeout 100 ms, one-byte context.",
      invitationID=0, timeoutMs=100, context=b"\x00")
valid("invite-max-timeout", "invitationID 2^64-1, maximum timeout 600000 ms, 300-byte "
      "context (the 65535-byte maximum is not included, to keep the file small).",
      invitationID=U64_MAX, timeoutMs=600_000, context=PATTERN_300)
valid("invite-json-context", "Context holding application JSON (opaque to the protocol).",
      invitationID=0x0123456789ABCDEF, timeoutMs=5_000, context=b'{"room":"lobby"}')
valid("invite-binary-context", "The context is opaque: bytes that are not UTF-8 are fine "
      "(Nearby's chat shows them with U+FFFD).", invitationID=2, timeoutMs=30_000,
      context=bytes.fromhex("ff00c0af"))

valid("accept-zero", "invitationID 0.", invitationID=0)
valid("accept-one", "invitationID 1.", invitationID=1)
valid("accept-max", "invitationID 2^64-1.", invitationID=U64_MAX)
valid("accept-pattern", "invitationID 0x0123456789abcdef (checks byte order).",
      invitationID=0x0123456789ABCDEF)

valid("decline-declined", "Reason 1 declined.", invitationID=1, reason=1)
valid("decline-busy", "Reason 3 busy.", invitationID=42, reason=3)
valid("decline-shutting-down", "Reason 5 shuttingDown, invitationID 2^64-1.",
      invitationID=U64_MAX, reason=5)
valid("decline-unknown-session", "Reason 6 unknownSession: the answer to a RESUME for a session "
      "the listener does not know (section 6.5); the id is the RESUME's sessionID.",
      invitationID=0x0123456789ABCDEF, reason=6)
valid("decline-unknown-reason-0", "Reason 0 is not defined: valid, the receiver treats it as "
      "declined and keeps the number.", invitationID=7, reason=0)
valid("decline-unknown-reason-255", "Reason 255 is not defined: valid, number kept.",
      invitationID=0, reason=255)

valid("message-broadcast", "Direct (the sender is the connection's peer), no recipients: for "
      "everyone, short text body.", messageID=1, sender=ALICE, timestamp=1_700_000_000_000,
      hopLimit=8, recipients=[], body=b"hello")
valid("message-private-1", "Direct, one recipient, UTF-8 text body.",
      messageID=0x0123456789ABCDEF, sender=ALICE, timestamp=1_700_000_000_123, hopLimit=8,
      recipients=[BOB], body="Grüße 👋".encode("utf-8"))
valid("message-private-3", "Direct, three distinct recipients, including the smallest and "
      "largest valid ids.", messageID=2, sender=BOB, timestamp=1_700_000_001_000, hopLimit=8,
      recipients=[CAROL, DAVE, MAXID], body=b"hi all three")
valid("message-empty-body", "Empty body, no recipients.",
      messageID=3, sender=ALICE, timestamp=1, hopLimit=8, recipients=[], body=b"")
valid("message-min-values", "messageID 0, timestamp 0, hopLimit 0 (a relay would not forward "
      "it further, but it is a valid frame).", messageID=0, sender=DAVE, timestamp=0,
      hopLimit=0, recipients=[ALICE], body=b"")
valid("message-max-values", "messageID and timestamp 2^64-1, hopLimit 255.",
      messageID=U64_MAX, sender=MAXID, timestamp=U64_MAX, hopLimit=255,
      recipients=[BOB], body=b"\xff")
valid("message-binary-body", "The body is opaque: bytes that are not valid UTF-8 are fine.",
      messageID=4, sender=CAROL, timestamp=1_700_000_002_000, hopLimit=7, recipients=[],
      body=bytes.fromhex("00c0afeda080ff80"))
valid("message-body-300", "A 300-byte body (the 1048576-byte maximum of a direct body and the "
      "1245330-byte maximum of a sealed one are not included, to keep the file small).",
      messageID=5, sender=ALICE, timestamp=1_700_000_003_000, hopLimit=8,
      recipients=[BOB, CAROL], body=PATTERN_300)
ENVELOPES = CRYPTO["envelopes"]
valid("message-sealed-everyone", "Sealed: alice's message to everyone behind a relay (bob and "
      "carol), as the relay forwards it to bob: hopLimit decremented from 8 to 7 (the hop "
      "limit is not signed). The body is the envelope of crypto.json (flags toEveryone).",
      messageID=int(ENVELOPES[0]["messageID"]), sender=ALICE,
      timestamp=int(ENVELOPES[0]["timestamp"]), hopLimit=7, recipients=[BOB, CAROL],
      body=bytes.fromhex(ENVELOPES[0]["sealed"]))
valid("message-sealed-private", "Sealed: alice's private message to carol, as alice hands it to "
      "the relay (hopLimit 8): the 'message' frame of the second envelope of crypto.json.",
      messageID=int(ENVELOPES[1]["messageID"]), sender=ALICE,
      timestamp=int(ENVELOPES[1]["timestamp"]), hopLimit=8, recipients=[CAROL],
      body=bytes.fromhex(ENVELOPES[1]["sealed"]))

valid("delivered-one", "One acknowledged id, no signature (a direct session).",
      origin=ALICE, recipient=BOB, ids=[1])
valid("delivered-many", "Twenty ids in one batch, including 0 and 2^64-1.",
      origin=BOB, recipient=CAROL,
      ids=[0, 1, 2, 3, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 1000, 1001, 1002, 1003,
           0x0123456789ABCDEF, 2**63 - 1, 2**63, U64_MAX - 1, U64_MAX, 42])
valid("delivered-duplicate-ids", "Ids may repeat: duplicates are allowed (section 4.6).",
      origin=ALICE, recipient=CAROL, ids=[5, 5, 7])
valid("delivered-max-id", "Single id 2^64-1, extreme peer ids.",
      origin=MAXID, recipient=DAVE, ids=[U64_MAX])
RECEIPT = CRYPTO["receipts"][0]
valid("delivered-signed", "A signed receipt, as it travels back through a relay (section 9.5): "
      "bob acknowledges three of alice's messages and signs; the 64-byte signature follows "
      "the ids. The receipt and its 'frame' are those of crypto.json.",
      origin=IDS[RECEIPT["origin"]], recipient=IDS[RECEIPT["recipient"]],
      ids=[int(i) for i in RECEIPT["messageIDs"]], signature=bytes.fromhex(RECEIPT["signature"]))

valid("ping-zero", "nonce 0.", nonce=0)
valid("ping-max", "nonce 2^64-1.", nonce=U64_MAX)
valid("ping-pattern", "nonce 0x0102030405060708 (checks byte order).", nonce=0x0102030405060708)
valid("pong-zero", "nonce 0.", nonce=0)
valid("pong-max", "nonce 2^64-1.", nonce=U64_MAX)
valid("pong-pattern", "nonce 0x0102030405060708 (checks byte order).", nonce=0x0102030405060708)

for number, reason in enumerate(["leaving", "shuttingDown", "duplicate", "invitationTimeout",
                                 "invitationDeclined", "replaced", "idle"], start=1):
    valid("goodbye-" + reason, "Reason %d %s." % (number, reason), reason=number)
valid("goodbye-unknown-reason-0", "Reason 0 is not defined: valid, treated as leaving.",
      reason=0)
valid("goodbye-unknown-reason-255", "Reason 255 is not defined: valid, treated as leaving.",
      reason=255)

valid("error-empty-message", "Code 1 malformedFrame with an empty message.",
      code=1, message="")
valid("error-utf8-message", "Code 5 unsupportedVersion with a UTF-8 message (en dash).",
      code=5, message="no common version: local 2–2, remote 3–4")
valid("error-japanese-message", "Code 8 busy with a CJK message.",
      code=8, message="接続が多すぎます")
valid("error-handshake-failed", "Code 10 handshakeFailed (version 2).",
      code=10, message="commitment mismatch")
valid("error-decrypt-failed", "Code 11 decryptFailed (version 2), sent sealed.",
      code=11, message="record 3 did not decrypt")
valid("error-unknown-code-0", "Code 0 is not defined: valid, the number is kept.",
      code=0, message="zero")
valid("error-unknown-code-65535", "Code 65535 is not defined: valid, the number is kept.",
      code=65535, message="max")
valid("error-max-message", "Message of exactly 1024 bytes (512 × 'é').",
      code=3, message="é" * 512)

valid("roster-full-empty", "kind 0 full with no entries: the relay reaches nobody else.",
      kind=0, entries=[])
valid("roster-full-several", "kind 0 full with three entries, multi-byte names, hops 1, 2 "
      "and 255; each key owns its id.", kind=0, entries=[
          entry(BOB, 1, "Zoë"), entry(CAROL, 2, "日本語"), entry(MALLORY, 255, "🦊 fox")])
valid("roster-add-one", "kind 1 add, one entry with a 63-byte name.",
      kind=1, entries=[entry(MALLORY, 1, "r" * 63)])
valid("roster-add-empty", "kind 1 add with no entries.", kind=1, entries=[])
valid("roster-remove-two", "kind 2 remove, two entries with 1-byte names.",
      kind=2, entries=[entry(ALICE, 1, "a"), entry(BOB, 3, "b")])
valid("roster-key-not-owning-id", "A well-formed ROSTER whose entry gives carol's id with "
      "mallory's key: the decoder does not check keys, but the receiver drops this entry and "
      "reports the relay (section 9.1).", kind=1,
      entries=[entry(CAROL, 1, "carol", key=KEY[MALLORY])])

for number, reason in enumerate(["unknownRecipient", "queueFull", "hopLimit", "notForMe"],
                                start=1):
    valid("undeliverable-" + reason, "Reason %d %s." % (number, reason),
          origin=ALICE, messageID=1000 + number, recipient=BOB, reason=number)
valid("undeliverable-unknown-reason-0", "Reason 0 is not defined: valid, the number is kept; "
      "messageID 0.", origin=CAROL, messageID=0, recipient=DAVE, reason=0)
valid("undeliverable-unknown-reason-255", "Reason 255 is not defined: valid, number kept; "
      "messageID 2^64-1.", origin=MAXID, messageID=U64_MAX, recipient=ALICE, reason=255)

valid("verify", "VERIFY: no payload (length 1). Asks the peer's person to compare the "
      "verification code (section 4.12).")

valid("resume-nothing-yet", "RESUME (section 4.13) of session 7 by a side that has received "
      "nothing from the other yet: flags 0, both ids 0.", sessionID=7, flags=0, received=0,
      delivered=0)
valid("resume-received", "Received up to message 1002, none of them taken by the application "
      "yet (flags 1): everything after 1002 is resent, nothing counts as delivered.",
      sessionID=0x0123456789ABCDEF, flags=1, received=1002, delivered=0)
valid("resume-received-and-delivered", "Received up to 1002, taken up to 1000 (flags 3): "
      "messages up to 1000 count as delivered, 1001 and 1002 wait for their DELIVERED, the "
      "rest is resent.", sessionID=42, flags=3, received=1002, delivered=1000)
valid("resume-max-values", "sessionID 2^64-1, received and delivered 2^64-1 (ids wrap to 0 "
      "after it, section 6.5).", sessionID=U64_MAX, flags=3, received=U64_MAX, delivered=U64_MAX)
valid("resume-message-id-0", "Received and taken up to message id 0: the flags, not the value, "
      "say that an id is present.", sessionID=0, flags=3, received=0, delivered=0)

# FILE (section 13): one frame type, its kind byte first, then the transfer id.
TID = bytes.fromhex("3fa9c2d1e0b14f5a8c7d6e5f40312233")
TMAX = b"\xff" * 16


def F(vector_name, description, kind, transfer=TID, **fields):
    valid(vector_name, description, kind=kind, transferID=transfer, **fields)


def offered(name, size, flags=0):
    return {"size": size, "flags": flags, "name": name}


def accepted(index, status=0, offset=0):
    return {"index": index, "status": status, "offset": offset}


def blake2b(data):
    """A file's hash as END carries it (section 13.4): BLAKE2b-256, no key, no label."""
    return hashlib.blake2b(data, digest_size=32).digest()


F("file-offer-one", "OFFER of one 5-byte file.", "OFFER", files=[offered("notes.txt", 5)])
F("file-offer-folder", "OFFER of a folder: files below it (one executable, flags bit 0), an "
  "empty folder (flags bit 1, size 0) and a name with non-ASCII characters (ü, ß, an "
  "emoji); names use '/' between folders.", "OFFER", files=[
      offered("photos/a.jpg", 1_234_567), offered("photos/run.sh", 120, flags=1),
      offered("photos/empty", 0, flags=2), offered("photos/Grüße 👋.txt", 0)])
F("file-offer-hostile-names", "Names a receiver must make safe (section 13.5) are valid on the "
  "wire: '..', an absolute path, U+0000, a Windows device name, 300 bytes, a right-to-left "
  "override. The receiver saves them as x, etc/passwd, a_b, _CON, a 200-byte name and "
  "_txt.exe.", "OFFER", files=[
      offered("../x", 1), offered("/etc/passwd", 2), offered("a\u0000b", 3), offered("CON", 4),
      offered("é" * 150, 5), offered("\u202etxt.exe", 6)])
F("file-offer-limits", "The largest size (2^62, the most all sizes may add up to) and the largest transfer id; unknown flags "
  "bits (0x84: bit 2 and bit 7) are kept.", "OFFER", transfer=TMAX,
  files=[offered("huge.img", 2**62), offered("odd", 0, flags=0x84)])
F("file-accept-fresh", "ACCEPT of the only file, from the start.", "ACCEPT",
  files=[accepted(0)])
F("file-accept-resume", "ACCEPT after a break: file 0 is already saved (status 1 'have', "
  "offset its size), file 2 resumes at 1 MiB, file 3 from the start; file 1 is not wanted "
  "(not listed).", "ACCEPT", files=[
      accepted(0, 1, 5), accepted(2, 0, 1_048_576), accepted(3, 0, 0)])
F("file-chunk", "CHUNK: the 5 bytes of file 0.", "CHUNK", index=0, offset=0, data=b"hello")
F("file-chunk-far", "CHUNK of file 4095 at offset 2^40+1, 300 bytes.", "CHUNK", index=4095,
  offset=2**40 + 1, data=PATTERN_300)
F("file-end", "END of file 0: its size and the BLAKE2b-256 of 'hello' (b2sum -l 256 prints "
  "the same).", "END", index=0, size=5, blake2b=blake2b(b"hello"))
F("file-end-empty", "END of an empty file: no CHUNK came before it; the hash of nothing.",
  "END", index=3, size=0, blake2b=blake2b(b""))
F("file-ack", "ACK: 1 MiB of file 2 is written.", "ACK", index=2, offset=1_048_576)
F("file-resend", "RESEND: bytes went missing on a relayed route; send file 2 again from "
  "131072.", "RESEND", index=2, offset=131_072)
F("file-verified", "VERIFIED: file 0 matched its hash and was saved.", "VERIFIED", index=0)
F("file-cancel", "CANCEL reason 1 cancelled, with a message for people.", "CANCEL", reason=1,
  message="cancelled by alice")
F("file-cancel-refused", "CANCEL reason 2 refused: the receiver's answer to an offer it does "
  "not want.", "CANCEL", reason=2, message="bob refused the offer")
F("file-cancel-integrity", "CANCEL reason 3 integrity, empty message.", "CANCEL", reason=3,
  message="")
F("file-cancel-unknown-reason", "CANCEL reason 200 is not defined: valid, treated as "
  "cancelled, the number kept.", "CANCEL", reason=200, message="?")


# --- invalid vectors -----------------------------------------------------------------------

INVALID = []


def invalid(name, error_name, description, data):
    INVALID.append({"name": name, "description": description, "hex": bytes(data).hex(),
                    "error": error_name})


T = TYPES
PING_FRAME = frame(T["PING"], u64(1))

# emptyFrame
invalid("empty-frame", "emptyFrame", "Length field 0 (no type byte).", u32(0))
invalid("empty-frame-then-ping", "emptyFrame", "Length field 0 followed by a valid PING: the "
        "decoder stops at the first error.", u32(0) + PING_FRAME)

# frameTooLarge: only the length prefix and a few bytes, rejected before the payload arrives.
invalid("too-large-by-one", "frameTooLarge", "Length 0x00200001 = MAX_FRAME_LENGTH + 1; only "
        "the 4 length bytes are sent: the decoder rejects on the prefix alone.",
        u32(MAX_FRAME_LENGTH + 1))
invalid("too-large-max-u32", "frameTooLarge", "Length 0xffffffff; only the 4 length bytes.",
        u32(0xFFFFFFFF))
invalid("too-large-with-some-payload", "frameTooLarge", "Length 0x00200001 followed by the "
        "start of a HELLO: rejected on the prefix, without waiting for 2 MiB.",
        u32(MAX_FRAME_LENGTH + 1) + u8(T["HELLO"]) + MAGIC)
invalid("too-large-http-request", "frameTooLarge", "An HTTP client: 'GET ' read as a length "
        "is 0x47455420, far above the maximum.", b"GET / HTTP/1.1\r\n")

# truncated: end of input in the middle of a frame.
invalid("truncated-length-1-byte", "truncated", "Input ends after 1 byte of the length prefix.",
        b"\x00")
invalid("truncated-length-2-bytes", "truncated", "Input ends after 2 bytes of the length "
        "prefix.", b"\x00\x00")
invalid("truncated-length-3-bytes", "truncated", "Input ends after 3 bytes of the length "
        "prefix.", b"\x00\x00\x00")
invalid("truncated-after-length", "truncated", "A PING length prefix (9) and nothing else.",
        u32(9))
invalid("truncated-after-type", "truncated", "A PING length prefix and type byte, no payload.",
        u32(9) + u8(T["PING"]))
invalid("truncated-mid-payload", "truncated", "A PING with 4 of its 8 nonce bytes.",
        u32(9) + u8(T["PING"]) + b"\x01\x02\x03\x04")
invalid("truncated-hello", "truncated", "A valid HELLO frame missing its last byte.",
        frame(T["HELLO"], hello())[:-1])
invalid("truncated-at-max-length", "truncated", "Length exactly MAX_FRAME_LENGTH (0x00200000) "
        "is accepted; the input ends after the type byte and a few payload bytes.",
        u32(MAX_FRAME_LENGTH) + u8(T["MESSAGE"]) + u64(1))

# unknownFrameType: a valid length, a type byte the frame decoder does not define (3.15).
invalid("unknown-type-0x00", "unknownFrameType", "Type 0x00, no payload.", frame(0x00, b""))
invalid("unknown-type-0x13", "unknownFrameType", "Type 0x13 (PADDED, a record type, never a frame), no payload.",
        frame(0x13, b""))
invalid("unknown-type-0x13-with-payload", "unknownFrameType", "Type 0x13 with an 8-byte "
        "payload.", frame(0x13, u64(1)))
invalid("unknown-type-0x10-handshake", "unknownFrameType", "Type 0x10 (HANDSHAKE) inside the "
        "record stream: the connection's own types are not frames of section 4.",
        frame(0x10, b"\x01"))
invalid("unknown-type-0x11-record", "unknownFrameType", "Type 0x11 (RECORD) inside the record "
        "stream, 16 bytes.", frame(0x11, bytes(16)))
invalid("unknown-type-0x12-close", "unknownFrameType", "Type 0x12 (CLOSE) inside the record "
        "stream, 16 bytes.", frame(0x12, bytes(16)))
invalid("unknown-type-0x80", "unknownFrameType", "Type 0x80, 1-byte payload.",
        frame(0x80, b"\x00"))
invalid("unknown-type-0xff", "unknownFrameType", "Type 0xFF, 4-byte payload.",
        frame(0xFF, b"\xde\xad\xbe\xef"))

# malformedFrame: payload size does not match the layout.
M = "malformedFrame"
invalid("hello-empty-payload", M, "HELLO with no payload at all (layout problem, so "
        "malformedFrame, not invalidHello).", frame(T["HELLO"], b""))
invalid("hello-too-short", M, "HELLO payload ends after magic and versions (capabilities, "
        "peer id and name missing).", frame(T["HELLO"], MAGIC + u8(2) + u8(2)))
invalid("hello-name-past-end", M, "HELLO name length 10 but only 3 name bytes follow.",
        frame(T["HELLO"], hello()[:-6] + u8(10) + b"ali"))
invalid("hello-trailing-byte", M, "A valid HELLO followed by one extra payload byte.",
        frame(T["HELLO"], hello() + b"\x00"))
invalid("invite-too-short", M, "INVITE payload of 8 bytes: timeoutMs and context missing.",
        frame(T["INVITE"], u64(1)))
invalid("invite-context-past-end", M, "INVITE context length 5 but 2 bytes follow.",
        frame(T["INVITE"], u64(1) + u32(30_000) + u16(5) + b"ab"))
invalid("invite-trailing-byte", M, "A valid INVITE followed by one extra byte.",
        frame(T["INVITE"], invite() + b"\x00"))
invalid("accept-empty", M, "ACCEPT with no payload.", frame(T["ACCEPT"], b""))
invalid("accept-too-short", M, "ACCEPT with a 7-byte invitationID.",
        frame(T["ACCEPT"], u64(1)[:7]))
invalid("accept-trailing-byte", M, "ACCEPT with 9 payload bytes.",
        frame(T["ACCEPT"], u64(1) + b"\x00"))
invalid("decline-too-short", M, "DECLINE without its reason byte.", frame(T["DECLINE"], u64(1)))
invalid("decline-trailing-byte", M, "DECLINE with one extra byte.",
        frame(T["DECLINE"], u64(1) + u8(1) + b"\x00"))
invalid("message-too-short", M, "MESSAGE whose payload ends after recipientCount (no body "
        "length).", frame(T["MESSAGE"], message()[:-4]))
invalid("message-recipients-past-end", M, "MESSAGE recipientCount 2 but one recipient id "
        "before the body length.", frame(T["MESSAGE"], message(recipients=[BOB], count=2)))
invalid("message-body-past-end", M, "MESSAGE body length 10 but only 5 body bytes follow.",
        frame(T["MESSAGE"], message()[:-4] + u32(10) + b"hello"))
invalid("message-body-over-limit-declared", M, "MESSAGE body length 1245331 (one above the "
        "sealed maximum) with no body bytes: malformed both because it exceeds the body limit "
        "and because it runs past the payload. A frame really carrying such a body is not "
        "included (it would need 1.2 MB of data); nor is a direct body of 1048577 bytes, which "
        "decodes and is refused by the session (ERROR malformedFrame, section 4.5).",
        frame(T["MESSAGE"], message()[:-4] + u32(MAX_SEALED_BODY + 1)))
invalid("message-trailing-byte", M, "A valid MESSAGE followed by one extra byte.",
        frame(T["MESSAGE"], message(body=b"x") + b"\x00"))
invalid("delivered-ids-past-end", M, "DELIVERED count 3 but 2 ids follow.",
        frame(T["DELIVERED"], delivered(ids=[1, 2], count=3)))
invalid("delivered-trailing-bytes", M, "DELIVERED count 1 followed by 12 bytes (one id and 4 "
        "extra bytes).", frame(T["DELIVERED"], delivered(ids=[1]) + b"\x00" * 4))
for extra in (1, 63, 65, 128):
    invalid("delivered-trailing-%d-bytes" % extra, M, "DELIVERED with %d bytes after its ids: a "
            "signature is exactly 64 bytes, and nothing else may follow the ids." % extra,
            frame(T["DELIVERED"], delivered(ids=[1, 2]) + bytes(range(extra))))
invalid("ping-empty", M, "PING with no nonce.", frame(T["PING"], b""))
invalid("ping-trailing-byte", M, "PING with a 9-byte payload.",
        frame(T["PING"], u64(1) + b"\x00"))
invalid("pong-too-short", M, "PONG with a 7-byte nonce.", frame(T["PONG"], u64(1)[:7]))
invalid("goodbye-empty", M, "GOODBYE with no reason byte.", frame(T["GOODBYE"], b""))
invalid("goodbye-trailing-byte", M, "GOODBYE with 2 payload bytes.",
        frame(T["GOODBYE"], b"\x01\x01"))
invalid("error-too-short", M, "ERROR with only one byte of code.", frame(T["ERROR"], b"\x00"))
invalid("error-message-past-end", M, "ERROR message length 10 but 3 bytes follow.",
        frame(T["ERROR"], u16(1) + u16(10) + b"abc"))
invalid("error-trailing-byte", M, "A valid ERROR followed by one extra byte.",
        frame(T["ERROR"], error(1, "x") + b"\x00"))
invalid("roster-entries-past-end", M, "ROSTER count 2 but one entry follows.",
        frame(T["ROSTER"], roster(0, [(BOB, 1, "bob")], count=2)))
invalid("roster-trailing-byte", M, "A valid ROSTER (one entry) followed by one extra byte.",
        frame(T["ROSTER"], roster(1, [(BOB, 1, "bob")]) + b"\x00"))
invalid("undeliverable-too-short", M, "UNDELIVERABLE without its reason byte.",
        frame(T["UNDELIVERABLE"], undeliverable()[:-1]))
invalid("undeliverable-trailing-byte", M, "UNDELIVERABLE with one extra byte.",
        frame(T["UNDELIVERABLE"], undeliverable() + b"\x00"))
invalid("verify-trailing-byte", M, "VERIFY with a 1-byte payload (it has none).",
        frame(T["VERIFY"], b"\x00"))
invalid("resume-too-short", M, "RESUME with 24 of its 25 payload bytes.",
        frame(T["RESUME"], resume()[:-1]))
invalid("resume-trailing-byte", M, "RESUME with one extra byte.",
        frame(T["RESUME"], resume() + b"\x00"))
invalid("resume-unknown-flag", M, "RESUME with flags 0x04: only bits 0 and 1 are defined.",
        frame(T["RESUME"], resume(flags=4)))
invalid("resume-received-without-flag", M, "RESUME with flags 0 but received 5: an absent id "
        "is sent as 0.", frame(T["RESUME"], resume(flags=0, received=5)))
invalid("resume-delivered-without-flag", M, "RESUME with flags 1 but delivered 3.",
        frame(T["RESUME"], resume(flags=1, received=5, delivered=3)))
invalid("resume-delivered-without-received", M, "RESUME with flags 2: nothing can have been "
        "taken by the application that was not received.",
        frame(T["RESUME"], resume(flags=2, delivered=3)))
invalid("roster-key-past-end", M, "ROSTER entry whose publicKey has 31 of its 32 bytes.",
        frame(T["ROSTER"], roster(1, [(BOB, 1, "bob")])[:-1]))
invalid("roster-key-missing", M, "ROSTER entry without its publicKey (the version 1 layout).",
        frame(T["ROSTER"], u8(1) + u16(1) + BOB + u8(1) + str8("bob")))

# malformedFrame: the layout is right but a field breaks its rule.
invalid("invite-timeout-99", M, "INVITE timeoutMs 99, below the 100 ms minimum.",
        frame(T["INVITE"], invite(timeout=99)))
invalid("invite-timeout-600001", M, "INVITE timeoutMs 600001, above the 600000 ms maximum.",
        frame(T["INVITE"], invite(timeout=600_001)))
invalid("invite-timeout-0", M, "INVITE timeoutMs 0.", frame(T["INVITE"], invite(timeout=0)))
invalid("message-recipient-count-4097", M, "MESSAGE recipientCount 4097 (limit 4096), no "
        "recipient data: malformed by the count limit and by the payload being too short "
        "(4097 real ids would need 64 KiB).", frame(T["MESSAGE"], message(count=4097)))
invalid("message-duplicate-recipient", M, "MESSAGE with recipients [BOB, BOB].",
        frame(T["MESSAGE"], message(recipients=[BOB, BOB])))
invalid("message-duplicate-recipient-apart", M, "MESSAGE with recipients [BOB, CAROL, BOB].",
        frame(T["MESSAGE"], message(recipients=[BOB, CAROL, BOB])))
invalid("message-zero-recipient", M, "MESSAGE with an all-zero recipient id.",
        frame(T["MESSAGE"], message(recipients=[ZERO])))
invalid("message-zero-recipient-among-others", M, "MESSAGE recipients [BOB, all-zero].",
        frame(T["MESSAGE"], message(recipients=[BOB, ZERO])))
invalid("delivered-count-0", M, "DELIVERED with count 0 and no ids (minimum is 1).",
        frame(T["DELIVERED"], delivered(ids=[])))
invalid("delivered-count-8193", M, "DELIVERED count 8193 (limit 8192) with 2 ids: malformed "
        "by the count limit and by the payload being too short (8193 real ids would need "
        "64 KiB).", frame(T["DELIVERED"], delivered(ids=[1, 2], count=8193)))
invalid("roster-zero-peer-id", M, "ROSTER entry with the all-zero peer id.",
        frame(T["ROSTER"], roster(1, [(ZERO, 1, "zero", KEY[BOB])])))
invalid("roster-kind-3", M, "ROSTER kind 3 (only 0 full, 1 add, 2 remove exist), no entries.",
        frame(T["ROSTER"], roster(kind=3)))
invalid("roster-kind-255", M, "ROSTER kind 255, one entry.",
        frame(T["ROSTER"], roster(255, [(BOB, 1, "bob")])))
invalid("roster-count-4097", M, "ROSTER count 4097 (limit 4096) with no entries: malformed by "
        "the count limit and by the payload being too short.",
        frame(T["ROSTER"], roster(0, [], count=4097)))
invalid("error-message-1025-bytes", M, "ERROR message of 1025 bytes (512 × 'é' + '!'), one "
        "above the 1024-byte limit; it is valid UTF-8.",
        frame(T["ERROR"], error(1, "é" * 512 + "!")))

BAD_UTF8 = [  # (suffix, bytes, what)
    ("overlong-2", b"\xc0\xaf", "overlong two-byte form of '/' (C0 AF)"),
    ("overlong-3", b"\xe0\x80\xaf", "overlong three-byte form of '/' (E0 80 AF)"),
    ("surrogate", b"\xed\xa0\x80", "UTF-16 surrogate U+D800 encoded in UTF-8 (ED A0 80)"),
    ("lone-continuation", b"\x80", "lone continuation byte (80)"),
    ("truncated-sequence", b"\xe6\x97", "three-byte sequence cut after two bytes (E6 97) at "
     "the end of the string"),
    ("above-10ffff", b"\xf4\x90\x80\x80", "code point above U+10FFFF (F4 90 80 80)"),
    ("byte-ff", b"\xff", "byte FF, never valid in UTF-8"),
]
for suffix, bad, what in BAD_UTF8:
    invalid("error-message-utf8-" + suffix, M, "ERROR message with invalid UTF-8: " + what + ".",
            frame(T["ERROR"], error(1, b"ab" + bad)))
for suffix, bad, what in BAD_UTF8[:5]:
    invalid("roster-name-utf8-" + suffix, M, "ROSTER entry name with invalid UTF-8: " + what
            + ".", frame(T["ROSTER"], roster(1, [(BOB, 1, b"ab" + bad)])))
invalid("roster-name-empty", M, "ROSTER entry with an empty name (display names are 1-63 "
        "bytes).", frame(T["ROSTER"], roster(0, [(BOB, 1, "")])))
invalid("roster-name-64-bytes", M, "ROSTER entry with a 64-byte name.",
        frame(T["ROSTER"], roster(0, [(BOB, 1, "r" * 64)])))
invalid("roster-name-control-newline", M, "ROSTER entry name containing a newline (U+000A).",
        frame(T["ROSTER"], roster(0, [(BOB, 1, "bob\nmallory")])))
invalid("roster-name-control-c1", M, "ROSTER entry name containing U+009B (C1 CSI).",
        frame(T["ROSTER"], roster(1, [(CAROL, 2, "x\u009b2J")])))

# invalidHello: the HELLO layout is right but magic, versions, peer id or name break a rule.
IH = "invalidHello"
for label, magic in [("NRBX", b"NRBX"), ("nrby", b"nrby"), ("zero", bytes(4))]:
    invalid("hello-magic-" + label.lower(), IH, "HELLO with magic %s instead of NRBY." %
            magic.hex(), frame(T["HELLO"], hello(magic=magic)))
invalid("hello-min-version-0", IH, "HELLO minVersion 0, maxVersion 2.",
        frame(T["HELLO"], hello(min_v=0, max_v=2)))
invalid("hello-versions-0-0", IH, "HELLO minVersion 0, maxVersion 0.",
        frame(T["HELLO"], hello(min_v=0, max_v=0)))
invalid("hello-min-above-max", IH, "HELLO minVersion 3 > maxVersion 2.",
        frame(T["HELLO"], hello(min_v=3, max_v=2)))
invalid("hello-zero-peer-id", IH, "HELLO with the all-zero peer id.",
        frame(T["HELLO"], hello(peer=ZERO)))
invalid("hello-name-empty", IH, "HELLO with a zero-length name (the layout is fine: the name "
        "rule is broken, so invalidHello).", frame(T["HELLO"], hello(name="")))
invalid("hello-name-64-ascii", IH, "HELLO name of 64 ASCII bytes (maximum 63).",
        frame(T["HELLO"], hello(name="n" * 64)))
invalid("hello-name-64-emoji", IH, "HELLO name of 16 emoji = 64 bytes: only 16 characters, "
        "but the limit is in bytes.", frame(T["HELLO"], hello(name="👋" * 16)))
invalid("hello-name-255-bytes", IH, "HELLO name of 255 bytes (the str8 maximum).",
        frame(T["HELLO"], hello(name="n" * 255)))
for label, ch in [("nul", "\u0000"), ("newline", "\n"), ("escape", "\u001b"),
                  ("del", "\u007f"), ("u0085", "\u0085"), ("u009f", "\u009f")]:
    invalid("hello-name-control-" + label, IH, "HELLO name containing the control character "
            "U+%04X." % ord(ch), frame(T["HELLO"], hello(name="bob" + ch + "x")))
invalid("hello-name-escape-sequence", IH, "HELLO name that would clear a terminal "
        "(ESC [ 2 J).", frame(T["HELLO"], hello(name="\u001b[2Jhi")))
for suffix, bad, what in BAD_UTF8:
    invalid("hello-name-utf8-" + suffix, IH, "HELLO name with invalid UTF-8: " + what + ".",
            frame(T["HELLO"], hello(name=b"ab" + bad)))


# malformedFrame: FILE frames (section 13.2).
def file_frame(kind, rest, transfer=TID):
    return frame(T["FILE"], u8(kind) + transfer + rest)


OFFER1 = u64(5) + u8(0) + str16("notes.txt")
invalid("file-empty", M, "FILE with no payload (no kind).", frame(T["FILE"], b""))
invalid("file-kind-0", M, "FILE kind 0 (kinds are 1 to 8).", file_frame(0, u16(0) + u64(0)))
invalid("file-kind-9", M, "FILE kind 9.", file_frame(9, u16(0)))
invalid("file-transfer-id-short", M, "FILE whose transfer id has 15 bytes.",
        frame(T["FILE"], u8(7) + TID[:15]))
invalid("file-zero-transfer-id", M, "FILE with the all-zero transfer id.",
        file_frame(7, u16(0), transfer=ZERO))
invalid("file-offer-count-0", M, "OFFER of no file.", file_frame(1, u16(0)))
invalid("file-offer-count-4097", M, "OFFER count 4097 (limit 4096), no entries.",
        file_frame(1, u16(4097)))
invalid("file-offer-entries-past-end", M, "OFFER count 2 with one entry.",
        file_frame(1, u16(2) + OFFER1))
invalid("file-offer-name-empty", M, "OFFER entry with an empty name.",
        file_frame(1, u16(1) + u64(5) + u8(0) + str16("")))
invalid("file-offer-name-4097-bytes", M, "OFFER entry whose name length is 4097 (limit "
        "4096), no name bytes.", file_frame(1, u16(1) + u64(5) + u8(0) + u16(4097)))
for suffix, bad, what in BAD_UTF8[:3]:
    invalid("file-offer-name-utf8-" + suffix, M, "OFFER name with invalid UTF-8: " + what + ".",
            file_frame(1, u16(1) + u64(5) + u8(0) + str16(b"ab" + bad)))
invalid("file-offer-size-above-2^62", M, "OFFER of a file of 2^62+1 bytes.",
        file_frame(1, u16(1) + u64(2**62 + 1) + u8(0) + str16("big")))
invalid("file-offer-total-above-2^62", M, "OFFER of two files, of 2^62 bytes and 1 byte: "
        "each within the limit, together above it.",
        file_frame(1, u16(2) + u64(2**62) + u8(0) + str16("big") + u64(1) + u8(0) + str16("one")))
invalid("file-offer-folder-with-size", M, "OFFER of an empty folder (flags bit 1) with a "
        "size of 1.", file_frame(1, u16(1) + u64(1) + u8(2) + str16("dir")))
invalid("file-offer-trailing-byte", M, "A valid OFFER followed by one byte.",
        file_frame(1, u16(1) + OFFER1 + b"\x00"))
invalid("file-accept-count-0", M, "ACCEPT of no file.", file_frame(2, u16(0)))
invalid("file-accept-status-2", M, "ACCEPT entry with status 2 (0 send, 1 have).",
        file_frame(2, u16(1) + u16(0) + u8(2) + u64(0)))
invalid("file-accept-twice", M, "ACCEPT listing file 0 twice.",
        file_frame(2, u16(2) + (u16(0) + u8(0) + u64(0)) * 2))
invalid("file-chunk-no-data", M, "CHUNK with no data bytes (at least 1).",
        file_frame(3, u16(0) + u64(0) + u32(0)))
invalid("file-chunk-524289", M, "CHUNK declaring 524289 data bytes (limit 524288), none "
        "follow.", file_frame(3, u16(0) + u64(0) + u32(MAX_CHUNK + 1)))
invalid("file-chunk-data-past-end", M, "CHUNK declaring 10 bytes, 5 follow.",
        file_frame(3, u16(0) + u64(0) + u32(10) + b"hello"))
invalid("file-end-hash-31-bytes", M, "END with a 31-byte hash.",
        file_frame(4, u16(0) + u64(5) + blake2b(b"hello")[:31]))
invalid("file-ack-trailing-byte", M, "ACK with one byte after its offset.",
        file_frame(5, u16(0) + u64(1) + b"\x00"))
invalid("file-verified-no-index", M, "VERIFIED without its index.", file_frame(7, b""))
invalid("file-cancel-message-1025-bytes", M, "CANCEL message of 1025 bytes (limit 1024).",
        file_frame(8, u8(1) + str16("é" * 512 + "!")))
invalid("file-cancel-message-utf8", M, "CANCEL message with invalid UTF-8.",
        file_frame(8, u8(1) + str16(b"ab\xff")))


# --- states (section 5.2) ------------------------------------------------------------------

COMMON = ["PING", "PONG", "GOODBYE", "ERROR"]
CONNECTED = ["MESSAGE", "DELIVERED", "UNDELIVERABLE", "VERIFY", "FILE"] + COMMON
STATES = {
    "states": {
        "awaitingHello": ["HELLO"],
        "idleListener": ["INVITE", "RESUME"] + COMMON,
        "idleConnector": list(COMMON),
        "inviting": ["ACCEPT", "DECLINE"] + COMMON,
        "resuming": ["RESUME", "DECLINE"] + COMMON,
        "invited": list(COMMON),
        "connected": CONNECTED,
        "connectedToRelay": CONNECTED + ["ROSTER"],
    },
    "notes": (
        "Legal frames by the receiver's state (PROTOCOL.md section 5.2). A frame not listed "
        "for the state is answered with ERROR unexpectedFrame and the connection is closed. "
        "'awaitingHello' is the handshake: no record has been opened yet, and its only frame "
        "is the HELLO the completed handshake carries as its payload (section 3.6); the "
        "plaintext frames of that phase are the handshake's business (a plaintext ERROR ends "
        "it, anything else is refused as section 3.6 says). HELLO is legal in no state of the "
        "record stream. 'connected' is a connection whose peer's HELLO did not have the relay "
        "capability bit; 'connectedToRelay' one whose peer's HELLO had it (ROSTER is legal "
        "only from a relay). FILE (section 13) is legal in both. In 'inviting', ACCEPT and DECLINE are legal only when they carry "
        "the pending invitation's id; another id is unexpectedFrame. RESUME is legal in "
        "'idleListener' only when the listener's own HELLO had the resume capability bit "
        "(section 6.5); without it RESUME is unexpectedFrame there too. 'resuming' is the "
        "connector after it sent RESUME: the listener's RESUME and DECLINE are legal only with "
        "the pending sessionID. 'closing' is not listed: in it every frame is read and "
        "discarded."
    ),
}


def build_frames():
    return {"protocolVersion": PROTOCOL_VERSION, "maxFrameLength": MAX_FRAME_LENGTH,
            "valid": VALID, "invalid": INVALID}


def dump(data):
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def main():
    names = [v["name"] for v in VALID + INVALID]
    assert len(names) == len(set(names)), "duplicate vector names"
    for filename, data in [("frames.json", build_frames()), ("states.json", STATES)]:
        with open(os.path.join(HERE, filename), "w", encoding="utf-8", newline="\n") as f:
            f.write(dump(data))
    print("wrote %d valid and %d invalid frame vectors, %d states"
          % (len(VALID), len(INVALID), len(STATES["states"])))


if __name__ == "__main__":
    main()
