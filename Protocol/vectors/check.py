#!/usr/bin/env python3
"""Self-check of the Nearby wire protocol version 2 frame vectors with an independent decoder.

The decoder below is written from Protocol/PROTOCOL.md and shares no code with the encoder
in generate.py. For every vector in frames.json it applies the rule the Swift tests use:
feed all bytes to an incremental decoder, then signal end of input.

- a valid vector must decode to exactly one frame equal to its "frame" object, with no
  error, both when fed at once and when fed one byte at a time;
- an invalid vector's first reported error must equal its "error", both ways, and must be
  reported without any frame decoded before it.

It also checks states.json, that both files are what generate.py produces now, and that the
frames taken from crypto.json agree with it: peer ids derived from their keys (with hashlib's
BLAKE2b), the HELLO payloads of the handshakes, the signed DELIVERED and the sealed MESSAGE.
Run: python3 Protocol/vectors/check.py   (exit status 0 when everything passes)
"""

import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_FRAME_LENGTH = 2097152
MAX_BODY = 1245330       # the sealed maximum; a direct body over 1048576 is the session's to refuse
NAMES = {1: "HELLO", 2: "INVITE", 3: "ACCEPT", 4: "DECLINE", 5: "MESSAGE", 6: "DELIVERED",
         7: "PING", 8: "PONG", 9: "GOODBYE", 10: "ERROR", 11: "ROSTER", 12: "UNDELIVERABLE",
         13: "VERIFY", 14: "RESUME", 15: "FILE"}
FILE_KINDS = {1: "OFFER", 2: "ACCEPT", 3: "CHUNK", 4: "END", 5: "ACK", 6: "RESEND",
              7: "VERIFIED", 8: "CANCEL"}
MAX_FILE_FRAME = 1048576  # section 13.2: it must fit an envelope's body through relays
ERRORS = {"emptyFrame", "frameTooLarge", "unknownFrameType", "malformedFrame", "invalidHello",
          "truncated"}


class DecodeError(Exception):
    def __init__(self, name, why):
        super().__init__("%s: %s" % (name, why))
        self.name = name


def malformed(why):
    return DecodeError("malformedFrame", why)


class Reader:
    """Reads the fields of one complete payload; running out of bytes is malformedFrame."""

    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        if self.pos + n > len(self.data):
            raise malformed("payload too short")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def uint(self, n): return int.from_bytes(self.take(n), "big")
    def u8(self): return self.uint(1)
    def u16(self): return self.uint(2)
    def u32(self): return self.uint(4)
    def u64(self): return str(self.uint(8))          # JSON form: decimal string
    def id128(self): return self.take(16).hex()
    def blob(self, len_size): return self.take(self.uint(len_size))

    def end(self):
        if self.pos != len(self.data):
            raise malformed("%d bytes left over" % (len(self.data) - self.pos))


def utf8(b, error_name="malformedFrame"):
    try:
        return b.decode("utf-8", errors="strict")   # rejects overlongs, surrogates, > U+10FFFF
    except UnicodeDecodeError:
        raise DecodeError(error_name, "invalid UTF-8")


def display_name(b, error_name):
    """Section 2.3: 1-63 bytes of UTF-8, no U+0000-U+001F or U+007F-U+009F."""
    if not 1 <= len(b) <= 63:
        raise DecodeError(error_name, "name of %d bytes" % len(b))
    s = utf8(b, error_name)
    if any(ord(c) <= 0x1F or 0x7F <= ord(c) <= 0x9F for c in s):
        raise DecodeError(error_name, "control character in name")
    return s


ZERO_ID = "0" * 32


def decode_payload(type_code, payload):
    r = Reader(payload)
    name = NAMES[type_code]
    f = {"type": name}
    if name == "HELLO":
        # Layout first (malformedFrame), then the HELLO rules (invalidHello).
        magic, vmin, vmax, caps, peer = r.take(4), r.u8(), r.u8(), r.u32(), r.id128()
        raw_name = r.blob(1)
        r.end()
        if magic != b"NRBY":
            raise DecodeError("invalidHello", "bad magic")
        if vmin == 0 or vmin > vmax:
            raise DecodeError("invalidHello", "bad version range")
        if peer == ZERO_ID:
            raise DecodeError("invalidHello", "all-zero peer id")
        f.update(minVersion=vmin, maxVersion=vmax, capabilities=caps, peerID=peer,
                 name=display_name(raw_name, "invalidHello"))
        return f
    if name == "INVITE":
        f.update(invitationID=r.u64(), timeoutMs=r.u32(), context=r.blob(2).hex())
        if not 100 <= f["timeoutMs"] <= 600000:
            raise malformed("timeoutMs out of range")
    elif name == "ACCEPT":
        f.update(invitationID=r.u64())
    elif name == "DECLINE":
        f.update(invitationID=r.u64(), reason=r.u8())
    elif name == "MESSAGE":
        f.update(messageID=r.u64(), sender=r.id128(), timestamp=r.u64(), hopLimit=r.u8())
        count = r.u16()
        if count > 4096:
            raise malformed("recipientCount > 4096")
        recipients = [r.id128() for _ in range(count)]
        if len(set(recipients)) != count:
            raise malformed("duplicate recipient")
        if ZERO_ID in recipients:
            raise malformed("all-zero recipient")
        length = r.u32()
        if length > MAX_BODY:
            raise malformed("body over %d bytes" % MAX_BODY)
        body = r.take(length)
        f.update(recipients=recipients, body=body.hex())
    elif name == "DELIVERED":
        f.update(origin=r.id128(), recipient=r.id128())
        count = r.u16()
        if not 1 <= count <= 8192:
            raise malformed("DELIVERED count out of range")
        f.update(ids=[r.u64() for _ in range(count)])   # duplicates allowed
        rest = len(payload) - r.pos
        if rest not in (0, 64):
            raise malformed("%d bytes after the ids: a signature is 64" % rest)
        if rest:
            f.update(signature=r.take(64).hex())
    elif name in ("PING", "PONG"):
        f.update(nonce=r.u64())
    elif name == "GOODBYE":
        f.update(reason=r.u8())
    elif name == "ERROR":
        code, text = r.u16(), r.blob(2)
        if len(text) > 1024:
            raise malformed("ERROR message over 1024 bytes")
        f.update(code=code, message=utf8(text))
    elif name == "ROSTER":
        kind, count = r.u8(), r.u16()
        if kind > 2:
            raise malformed("unknown ROSTER kind")
        if count > 4096:
            raise malformed("ROSTER count > 4096")
        entries = []
        for _ in range(count):
            peer, hops = r.id128(), r.u8()
            if peer == ZERO_ID:
                raise malformed("all-zero roster peer id")
            entries.append({"peerID": peer, "hops": hops,
                            "name": display_name(r.blob(1), "malformedFrame"),
                            "publicKey": r.take(32).hex()})
        f.update(kind=kind, entries=entries)
    elif name == "UNDELIVERABLE":
        f.update(origin=r.id128(), messageID=r.u64(), recipient=r.id128(), reason=r.u8())
    elif name == "RESUME":
        session, flags, received, delivered = r.u64(), r.u8(), r.u64(), r.u64()
        if flags & ~3:
            raise malformed("RESUME flags other than bits 0 and 1")
        if not flags & 1 and received != "0":
            raise malformed("RESUME received without its flag")
        if not flags & 2 and delivered != "0":
            raise malformed("RESUME delivered without its flag")
        if flags & 2 and not flags & 1:
            raise malformed("RESUME delivered without received")
        f.update(sessionID=session, flags=flags, received=received, delivered=delivered)
    elif name == "FILE":
        decode_file(r, f, len(payload) + 1)
    r.end()
    return f


def decode_file(r, f, length):
    """Section 13.2: kind, transfer id, then the kind's fields."""
    if length > MAX_FILE_FRAME:
        raise malformed("FILE frame over 1 MiB")
    kind = r.u8()
    if kind not in FILE_KINDS:
        raise malformed("FILE kind %d" % kind)
    transfer = r.id128()
    if transfer == ZERO_ID:
        raise malformed("all-zero transfer id")
    f.update(kind=FILE_KINDS[kind], transferID=transfer)
    if kind == 1:
        count = r.u16()
        if not 1 <= count <= 4096:
            raise malformed("OFFER count out of range")
        files = []
        for _ in range(count):
            size, flags, raw_name = r.uint(8), r.u8(), r.blob(2)
            if not 1 <= len(raw_name) <= 4096:
                raise malformed("OFFER name of %d bytes" % len(raw_name))
            if size > 2**62:
                raise malformed("OFFER size above 2^62")
            if flags & 2 and size:
                raise malformed("a folder with a size")
            files.append({"size": str(size), "flags": flags, "name": utf8(raw_name)})
        if sum(int(entry["size"]) for entry in files) > 2**62:
            raise malformed("OFFER sizes add up to more than 2^62")
        f.update(files=files)
    elif kind == 2:
        count = r.u16()
        if not 1 <= count <= 4096:
            raise malformed("ACCEPT count out of range")
        files = []
        for _ in range(count):
            index, status, offset = r.u16(), r.u8(), r.u64()
            if status > 1:
                raise malformed("ACCEPT status %d" % status)
            if any(e["index"] == index for e in files):
                raise malformed("ACCEPT lists a file twice")
            files.append({"index": index, "status": status, "offset": offset})
        f.update(files=files)
    elif kind == 3:
        index, offset, data = r.u16(), r.u64(), r.blob(4)
        if not 1 <= len(data) <= 524288:
            raise malformed("CHUNK of %d bytes" % len(data))
        f.update(index=index, offset=offset, data=data.hex())
    elif kind == 4:
        f.update(index=r.u16(), size=r.u64(), blake2b=r.take(32).hex())
    elif kind in (5, 6):
        f.update(index=r.u16(), offset=r.u64())
    elif kind == 7:
        f.update(index=r.u16())
    else:
        reason, text = r.u8(), r.blob(2)
        if len(text) > 1024:
            raise malformed("CANCEL message over 1024 bytes")
        f.update(reason=reason, message=utf8(text))


class Decoder:
    """Incremental frame decoder (section 3). After an error it accepts nothing more."""

    def __init__(self):
        self.buf = bytearray()

    def feed(self, data):
        """Append bytes; return the frames completed. Raises DecodeError."""
        self.buf += data
        frames = []
        while len(self.buf) >= 4:
            length = int.from_bytes(self.buf[:4], "big")
            if length == 0:
                raise DecodeError("emptyFrame", "length 0")
            if length > MAX_FRAME_LENGTH:
                raise DecodeError("frameTooLarge", "length %d" % length)
            if len(self.buf) < 4 + length:
                break
            type_code, payload = self.buf[4], bytes(self.buf[5:4 + length])
            del self.buf[:4 + length]
            if type_code not in NAMES:
                raise DecodeError("unknownFrameType", "type 0x%02x" % type_code)
            frames.append(decode_payload(type_code, payload))
        return frames

    def finish(self):
        if self.buf:
            raise DecodeError("truncated", "%d bytes left over" % len(self.buf))


def run(data, chunk):
    """Apply the vector rule; return (frames decoded, first error name or None)."""
    d, frames = Decoder(), []
    try:
        for i in range(0, len(data), chunk):
            frames += d.feed(data[i:i + chunk])
        d.finish()
    except DecodeError as e:
        return frames, e.name
    return frames, None


def owns(public_key_hex, peer_id_hex):
    """Section 2.2: peerID = BLAKE2b-128("nearby-peer-id-v2" || publicKey)."""
    digest = hashlib.blake2b(b"nearby-peer-id-v2" + bytes.fromhex(public_key_hex), digest_size=16)
    return digest.hexdigest() == peer_id_hex


def check_crypto_links(doc):
    """The frames built from crypto.json's values agree with it, byte for byte."""
    failures = []
    with open(os.path.join(HERE, "crypto.json"), encoding="utf-8") as f:
        crypto = json.load(f)
    for person in crypto["identities"]:
        if not owns(person["publicKey"], person["peerID"]):
            failures.append("crypto.json: %s's key does not own its id" % person["name"])
    keys = {p["peerID"]: p["publicKey"] for p in crypto["identities"]}
    valid = {v["name"]: v for v in doc["valid"]}
    for v in doc["valid"]:
        for e in v["frame"].get("entries", []) if v["frame"]["type"] == "ROSTER" else []:
            mismatched = v["name"] == "roster-key-not-owning-id"
            if owns(e["publicKey"], e["peerID"]) == mismatched:
                failures.append("%s: entry %s %s its id" % (v["name"], e["peerID"],
                                                            "owns" if mismatched else "does not own"))
            if not mismatched and keys.get(e["peerID"]) != e["publicKey"]:
                failures.append("%s: entry %s does not have its crypto.json key" % (v["name"], e["peerID"]))
    handshake = crypto["handshakes"][0]
    links = [("hello-basic", "hex", handshake["initiatorPayload"]),
             ("hello-bob", "hex", handshake["responderPayload"]),
             ("delivered-signed", "hex", crypto["receipts"][0]["frame"]),
             ("message-sealed-private", "hex", crypto["envelopes"][1]["message"])]
    for name, field, expected in links:
        if valid[name][field] != expected:
            failures.append("%s differs from crypto.json" % name)
    if valid["message-sealed-everyone"]["frame"]["body"] != crypto["envelopes"][0]["sealed"]:
        failures.append("message-sealed-everyone: the body is not crypto.json's envelope")
    return failures


def main():
    failures = []
    with open(os.path.join(HERE, "frames.json"), encoding="utf-8") as f:
        doc = json.load(f)
    assert list(doc) == ["protocolVersion", "maxFrameLength", "valid", "invalid"]
    assert doc["protocolVersion"] == 2 and doc["maxFrameLength"] == MAX_FRAME_LENGTH

    for v in doc["valid"]:
        data = bytes.fromhex(v["hex"])
        for chunk in (max(1, len(data)), 1):
            frames, err = run(data, chunk)
            if err or frames != [v["frame"]]:
                failures.append("valid %s (chunk %d): %s %s" % (v["name"], chunk, err, frames))
    for v in doc["invalid"]:
        data = bytes.fromhex(v["hex"])
        if v["error"] not in ERRORS:
            failures.append("invalid %s: unknown error name %s" % (v["name"], v["error"]))
        for chunk in (max(1, len(data)), 1):
            frames, err = run(data, chunk)
            if err != v["error"] or frames:
                failures.append("invalid %s (chunk %d): got %s after %d frames, want %s"
                                % (v["name"], chunk, err, len(frames), v["error"]))
    names = [v["name"] for v in doc["valid"] + doc["invalid"]]
    if len(names) != len(set(names)):
        failures.append("duplicate vector names")

    with open(os.path.join(HERE, "states.json"), encoding="utf-8") as f:
        states = json.load(f)
    expected_states = {"awaitingHello", "idleListener", "idleConnector", "inviting", "invited",
                       "resuming", "connected", "connectedToRelay"}
    if set(states["states"]) != expected_states:
        failures.append("states.json: state names")
    for state, legal in states["states"].items():
        if not set(legal) <= set(NAMES.values()) or len(set(legal)) != len(legal):
            failures.append("states.json: bad list for " + state)
    # Section 5.2: HELLO only as the handshake's frame, VERIFY and FILE only when connected,
    # ROSTER only from a relay.
    where = lambda name: {s for s, legal in states["states"].items() if name in legal}
    for name, expected in [("HELLO", {"awaitingHello"}), ("VERIFY", {"connected", "connectedToRelay"}),
                           ("ROSTER", {"connectedToRelay"}), ("RESUME", {"idleListener", "resuming"}),
                           ("FILE", {"connected", "connectedToRelay"}),
                           ("ACCEPT", {"inviting"}), ("DECLINE", {"inviting", "resuming"})]:
        if where(name) != expected:
            failures.append("states.json: %s legal in %s" % (name, sorted(where(name))))
    if states["states"]["awaitingHello"] != ["HELLO"]:
        failures.append("states.json: awaitingHello delivers only the handshake's HELLO")

    failures += check_crypto_links(doc)

    # The checked-in files are exactly what generate.py writes now.
    sys.dont_write_bytecode = True   # leave no __pycache__ next to the vectors
    sys.path.insert(0, HERE)
    import generate
    for filename, data in [("frames.json", generate.build_frames()),
                           ("states.json", generate.STATES)]:
        with open(os.path.join(HERE, filename), encoding="utf-8") as f:
            if f.read() != generate.dump(data):
                failures.append(filename + " is stale: run generate.py")

    for line in failures:
        print("FAIL", line)
    print("%d valid, %d invalid vectors checked: %s"
          % (len(doc["valid"]), len(doc["invalid"]), "FAILED" if failures else "all passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
