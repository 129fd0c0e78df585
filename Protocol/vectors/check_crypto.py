#!/usr/bin/env python3
"""Independent check of Protocol/vectors/crypto.json against Protocol/PROTOCOL.md (version 2).

Everything is recomputed from the specification with PyNaCl (Ed25519, X25519, the AEADs,
crypto_box) and Python's hashlib (BLAKE2b); nothing is taken from the file except the
inputs (seeds, ephemeral secrets, payloads, plaintexts, content keys). It shares no code
with the Swift implementation that generated the file.

Run: python3 Protocol/vectors/check_crypto.py     (pip install pynacl)
Exit status 0 when every value matches; 1 with a list of what did not.
"""

import hashlib
import json
import os
import sys

try:
    import nacl.bindings as sodium
    from nacl.exceptions import BadSignatureError, CryptoError
    from nacl.signing import VerifyKey
except ImportError:
    sys.exit("check_crypto.py needs PyNaCl: pip install pynacl (or Debian's python3-nacl)")

if not hasattr(sodium, "crypto_box_easy"):
    # PyNaCl before 1.6 (Debian 12's python3-nacl is 1.5) binds only NaCl's crypto_box, which
    # it already returns without the zero padding: MAC then ciphertext, the bytes of
    # crypto_box_easy.
    def _box_easy(message, nonce, public, secret):
        return sodium.crypto_box(message, nonce, public, secret)

    def _box_open_easy(sealed, nonce, public, secret):
        return sodium.crypto_box_open(sealed, nonce, public, secret)

    sodium.crypto_box_easy = _box_easy
    sodium.crypto_box_open_easy = _box_open_easy

HERE = os.path.dirname(os.path.abspath(__file__))
FAILURES = []
CHECKS = [0]
SKIPPED = []


def check(what, expected, actual):
    CHECKS[0] += 1
    if expected != actual:
        show = lambda v: v.hex() if isinstance(v, (bytes, bytearray)) else repr(v)
        FAILURES.append("%s:\n    file: %s\n    spec: %s" % (what, show(expected), show(actual)))


def unhex(text):
    return bytes.fromhex(text)


# --- primitives, as the specification names them -------------------------------------

def H(*parts, size=32):
    return hashlib.blake2b(b"".join(parts), digest_size=size).digest()


def MAC(key, *parts, size=32):
    return hashlib.blake2b(b"".join(parts), digest_size=size, key=key).digest()


def u16(v): return v.to_bytes(2, "big")
def u32(v): return v.to_bytes(4, "big")
def u64(v): return v.to_bytes(8, "big")


def frame(type_byte, payload):
    return u32(1 + len(payload)) + bytes([type_byte]) + payload


def sign(seed, message):
    _, secret = sodium.crypto_sign_seed_keypair(seed)
    return sodium.crypto_sign(message, secret)[:64]


def verify(public, signature, message):
    try:
        VerifyKey(public).verify(message, signature)
        return True
    except (BadSignatureError, ValueError):
        return False


def aead_seal(cipher, key, nonce, ad, plaintext):
    if cipher == "AES-256-GCM":
        return sodium.crypto_aead_aes256gcm_encrypt(plaintext, ad, nonce, key)
    return sodium.crypto_aead_chacha20poly1305_ietf_encrypt(plaintext, ad, nonce, key)


def aead_open(cipher, key, nonce, ad, sealed):
    try:
        if cipher == "AES-256-GCM":
            return sodium.crypto_aead_aes256gcm_decrypt(sealed, ad, nonce, key)
        return sodium.crypto_aead_chacha20poly1305_ietf_decrypt(sealed, ad, nonce, key)
    except CryptoError:
        return None


def aes_available():
    try:
        sodium.crypto_aead_aes256gcm_encrypt(b"", b"", bytes(12), bytes(32))
        return True
    except Exception:  # not bound by this PyNaCl, or no AES-NI
        return False


ZERO_NONCE = bytes(12)


def peer_id(public):
    return H(b"nearby-peer-id-v2", public, size=16)


class Identity:
    def __init__(self, seed):
        self.seed = seed
        self.public, _ = sodium.crypto_sign_seed_keypair(seed)
        self.id = peer_id(self.public)


# --- the handshake ---------------------------------------------------------------------

def negotiate(a, b):
    if not (a & 1 and b & 1):
        return None
    return "AES-256-GCM" if (a & 2 and b & 2) else "ChaCha20-Poly1305"


def identity_block(identity, payload):
    return identity.public + u16(len(payload)) + payload


def parse_block(block):
    if len(block) < 98:
        return None
    n = int.from_bytes(block[32:34], "big")
    if n > 4096 or len(block) != 98 + n:
        return None
    return block[:32], block[34:34 + n], block[34 + n:]


def hello_payload_peer(payload):
    """PROTOCOL.md 3.6 and 4.1: the payload is one HELLO frame with versions 2; its peer id."""
    if len(payload) < 5 or int.from_bytes(payload[:4], "big") != len(payload) - 4 or payload[4] != 0x01:
        return None
    body = payload[5:]
    if len(body) < 27 or body[:4] != b"NRBY" or not body[4] <= 2 <= body[5] or len(body) != 27 + body[26]:
        return None
    return body[10:26]


class Handshake:
    """One side, written from section 3 of the specification."""

    def __init__(self, role, identity, ephemeral_secret, payload, ciphers, expecting=None):
        self.role, self.identity, self.payload, self.ciphers = role, identity, payload, ciphers
        self.e_secret = ephemeral_secret
        self.e_public = sodium.crypto_scalarmult_base(ephemeral_secret)
        self.expecting = expecting
        self.h = H(b"nearby-v2-handshake")
        self.trace = {"h0": self.h}
        self.step = 2 if role == "initiator" else 1

    def message1(self):
        self.commitment = H(b"nearby-v2-commit", self.e_public)
        m1 = bytes([1]) + b"NRBY" + bytes([2, 2, self.ciphers]) + self.commitment
        self.h = H(self.h, m1)
        self.trace["h1"] = self.h
        return frame(0x10, m1)

    def keys_after_reveal(self, reveal, peer_ephemeral):
        self.hc = H(self.h, reveal)
        self.trace["hc"] = self.hc
        self.code = "%06d" % (int.from_bytes(H(b"nearby-v2-code", self.hc)[:8], "big") % 1000000)
        dh = sodium.crypto_scalarmult(self.e_secret, peer_ephemeral)
        if dh == bytes(32):
            raise HandshakeFailure("invalidEphemeralKey", 10)
        self.trace["sharedSecret"] = dh
        self.ck = MAC(dh, b"nearby-v2-chain", self.hc)
        self.k3 = MAC(self.ck, b"nearby-v2-initiator-identity")
        self.k4 = MAC(self.ck, b"nearby-v2-responder-identity")

    def receive(self, data):
        """Feeds one chunk; returns the bytes to send. Raises HandshakeFailure."""
        if len(data) >= 4 and int.from_bytes(data[:4], "big") not in range(1, 8193):
            raise HandshakeFailure("frameTooLarge", 2)
        length = int.from_bytes(data[:4], "big")
        type_byte, body = data[4], data[5:4 + length]
        if type_byte == 0x01:
            raise HandshakeFailure("peerSpeaksVersion1", 5)
        if type_byte == 0x0A:
            code = int.from_bytes(body[:2], "big")
            raise HandshakeFailure("peerSpeaksVersion1" if code == 4 else "remoteError", None)
        if type_byte != 0x10:
            raise HandshakeFailure("unexpectedFrame", 3)
        if not body or body[0] != self.step:
            raise HandshakeFailure("unexpectedMessage", 3)
        return getattr(self, "on_message%d" % self.step)(body)

    def on_message1(self, m1):
        if len(m1) != 40 or m1[1:5] != b"NRBY" or not (1 <= m1[5] <= m1[6]):
            raise HandshakeFailure("malformedMessage", 1)
        if not (m1[5] <= 2 <= m1[6]):
            raise HandshakeFailure("noCommonVersion", 5)
        self.cipher = negotiate(self.ciphers, m1[7])
        if self.cipher is None:
            raise HandshakeFailure("noCommonCipher", 10)
        self.peer_commitment = m1[8:40]
        self.h = H(self.h, m1)
        self.trace["h1"] = self.h
        m2 = bytes([2, 2, self.ciphers]) + self.e_public
        self.h = H(self.h, m2)
        self.trace["h2"] = self.h
        self.step = 3
        return frame(0x10, m2)

    def on_message2(self, m2):
        if len(m2) != 35:
            raise HandshakeFailure("malformedMessage", 1)
        if m2[1] != 2:
            raise HandshakeFailure("noCommonVersion", 5)
        self.cipher = negotiate(self.ciphers, m2[2])
        if self.cipher is None:
            raise HandshakeFailure("noCommonCipher", 10)
        self.h = H(self.h, m2)
        self.trace["h2"] = self.h
        reveal = bytes([3]) + self.e_public
        self.keys_after_reveal(reveal, m2[3:35])
        block = identity_block(self.identity, self.payload)
        signature = sign(self.identity.seed, b"nearby-v2-initiator-signature" + self.hc + block)
        sealed = aead_seal("ChaCha20-Poly1305", self.k3, ZERO_NONCE, self.hc, block + signature)
        self.h = H(self.hc, sealed)
        self.trace["h3"] = self.h
        self.step = 4
        return frame(0x10, reveal + sealed)

    def on_message3(self, m3):
        if not (33 + 114 <= len(m3) <= 33 + 114 + 4096):
            raise HandshakeFailure("malformedMessage", 1)
        if H(b"nearby-v2-commit", m3[1:33]) != self.peer_commitment:
            raise HandshakeFailure("commitmentMismatch", 10)
        self.keys_after_reveal(m3[:33], m3[1:33])
        block = aead_open("ChaCha20-Poly1305", self.k3, ZERO_NONCE, self.hc, m3[33:])
        if block is None:
            raise HandshakeFailure("decryptFailed", 10)
        remote = self.check_block(block, b"nearby-v2-initiator-signature", self.hc)
        self.h = H(self.hc, m3[33:])
        self.trace["h3"] = self.h
        mine = identity_block(self.identity, self.payload)
        signature = sign(self.identity.seed, b"nearby-v2-responder-signature" + self.h + mine)
        m4 = bytes([4]) + aead_seal("ChaCha20-Poly1305", self.k4, ZERO_NONCE, self.h, mine + signature)
        self.finish(m4, remote)
        return frame(0x10, m4)

    def on_message4(self, m4):
        if not (1 + 114 <= len(m4) <= 1 + 114 + 4096):
            raise HandshakeFailure("malformedMessage", 1)
        block = aead_open("ChaCha20-Poly1305", self.k4, ZERO_NONCE, self.h, m4[1:])
        if block is None:
            raise HandshakeFailure("decryptFailed", 10)
        remote = self.check_block(block, b"nearby-v2-responder-signature", self.h)
        if self.expecting is not None and peer_id(remote[0]) != self.expecting:
            raise HandshakeFailure("wrongPeer", 9)
        self.finish(m4, remote)
        return b""

    def check_block(self, block, label, transcript):
        parsed = parse_block(block)
        if parsed is None:
            raise HandshakeFailure("malformedMessage", 1)
        public, payload, signature = parsed
        if not verify(public, signature, label + transcript + block[:-64]):
            raise HandshakeFailure("invalidSignature", 10)
        if public == self.identity.public:
            raise HandshakeFailure("connectedToSelf", 9)
        return parsed

    def finish(self, m4, remote):
        self.h = H(self.h, m4)
        self.trace["h4"] = self.h
        self.remote = remote
        self.i2r = MAC(self.ck, b"nearby-v2-initiator-to-responder", self.h)
        self.r2i = MAC(self.ck, b"nearby-v2-responder-to-initiator", self.h)
        self.step = None


class HandshakeFailure(Exception):
    def __init__(self, name, code):
        super().__init__(name)
        self.name, self.code = name, code


# --- records -------------------------------------------------------------------------------

class Direction:
    """Key, sequence number and rekey counters of one direction (section 5)."""

    def __init__(self, cipher, key, every_records=1 << 20, every_bytes=1 << 30):
        self.cipher, self.key, self.sequence, self.epoch = cipher, key, 0, 0
        self.every_records, self.every_bytes = every_records, every_bytes
        self.records = self.bytes = 0

    def nonce(self):
        return bytes(4) + u64(self.sequence)

    def advance(self, plaintext_length):
        self.sequence += 1
        self.records += 1
        self.bytes += plaintext_length
        if self.records >= self.every_records or self.bytes >= self.every_bytes:
            self.key = MAC(self.key, b"nearby-v2-rekey")
            self.epoch += 1
            self.records = self.bytes = 0


def padded_plaintext(frames, padding):
    """A PADDED record's plaintext (3.10): the frames, `padding` zeros, then their count."""
    return frames + bytes(padding) + bytes([padding])


def unpad(plaintext):
    """The frames of a PADDED record's plaintext, or None when its padding is malformed."""
    if not plaintext:
        return None
    padding = plaintext[-1]
    if padding > len(plaintext) - 1 or any(plaintext[len(plaintext) - 1 - padding:-1]):
        return None
    return plaintext[:len(plaintext) - 1 - padding]


def seal_record(direction, type_byte, plaintext):
    header = u32(1 + len(plaintext) + 16) + bytes([type_byte])
    record = header + aead_seal(direction.cipher, direction.key, direction.nonce(), header, plaintext)
    direction.advance(len(plaintext))
    return record


def open_stream(direction, stream):
    """Opens a whole stream, then signals end of input: (delivered plaintext, error name)."""
    delivered, pos, closed = b"", 0, False
    while True:
        left = len(stream) - pos
        if closed:
            return delivered, ("dataAfterClose" if left else None)
        if left < 4:
            return delivered, "truncated"
        length = int.from_bytes(stream[pos:pos + 4], "big")
        if length > 1 + 65536 + 16:
            return delivered, "recordTooLarge"
        if left < 5:
            return delivered, "truncated"
        type_byte = stream[pos + 4]
        if type_byte not in (0x11, 0x12, 0x13) or length < 17 or (type_byte == 0x12 and length != 17) \
                or (type_byte == 0x13 and length < 18):
            return delivered, "malformedRecord"
        if left < 4 + length:
            return delivered, "truncated"
        header = stream[pos:pos + 5]
        plaintext = aead_open(direction.cipher, direction.key, direction.nonce(), header, stream[pos + 5:pos + 4 + length])
        if plaintext is None:
            return delivered, "decryptFailed"
        direction.advance(len(plaintext))
        pos += 4 + length
        if type_byte == 0x12:
            closed = True
        elif type_byte == 0x13:
            frames = unpad(plaintext)
            if frames is None:
                return delivered, "malformedRecord"
            delivered += frames
        else:
            delivered += plaintext


# --- the checks ------------------------------------------------------------------------------

def check_identities(data):
    people = {}
    for entry in data["identities"]:
        me = Identity(unhex(entry["seed"]))
        people[entry["name"]] = me
        where = "identity %s" % entry["name"]
        check(where + " publicKey", unhex(entry["publicKey"]), me.public)
        check(where + " peerID", unhex(entry["peerID"]), me.id)
        _, secret = sodium.crypto_sign_seed_keypair(me.seed)
        check(where + " x25519PublicKey", unhex(entry["x25519PublicKey"]), sodium.crypto_sign_ed25519_pk_to_curve25519(me.public))
        check(where + " x25519SecretKey", unhex(entry["x25519SecretKey"]), sodium.crypto_sign_ed25519_sk_to_curve25519(secret))
    alice = people["alice"]
    expected = "# Nearby identity key: the secret key of one peer. Keep it private (mode 0600).\n" \
        "nearby-identity-key 2\npeer-id %s\nseed %s\n" % (alice.id.hex(), alice.seed.hex())
    check("keyFile", data["keyFile"], expected)
    return people


def check_handshake(vector, people):
    where = "handshake '%s'" % vector["name"]
    if "AES" in vector["cipher"] and not aes_available():
        SKIPPED.append(where + " (AES-256-GCM records: not available in this PyNaCl or CPU)")
    initiator = Handshake("initiator", people[vector["initiator"]], unhex(vector["initiatorEphemeralSecret"]),
                          unhex(vector["initiatorPayload"]), vector["initiatorCiphers"], unhex(vector["expectedPeerID"]))
    responder = Handshake("responder", people[vector["responder"]], unhex(vector["responderEphemeralSecret"]),
                          unhex(vector["responderPayload"]), vector["responderCiphers"])
    try:
        m1 = initiator.message1()
        m2 = responder.receive(m1)
        m3 = initiator.receive(m2)
        m4 = responder.receive(m3)
        initiator.receive(m4)
    except HandshakeFailure as failure:
        FAILURES.append("%s: the Python handshake failed with %s" % (where, failure.name))
        return
    for index, message in enumerate([m1, m2, m3, m4]):
        check("%s message %d" % (where, index + 1), unhex(vector["messages"][index]), message)
    check(where + " initiatorEphemeralPublic", unhex(vector["initiatorEphemeralPublic"]), initiator.e_public)
    check(where + " responderEphemeralPublic", unhex(vector["responderEphemeralPublic"]), responder.e_public)
    check(where + " commitment", unhex(vector["commitment"]), initiator.commitment)
    for side in (initiator, responder):
        for name, value in side.trace.items():
            expected = unhex(vector["transcript"][name]) if name in vector["transcript"] else unhex(vector[name])
            check("%s %s (%s)" % (where, name, side.role), expected, value)
    check(where + " chainKey", unhex(vector["chainKey"]), responder.ck)
    check(where + " initiatorIdentityKey", unhex(vector["initiatorIdentityKey"]), responder.k3)
    check(where + " responderIdentityKey", unhex(vector["responderIdentityKey"]), initiator.k4)
    check(where + " initiatorToResponderKey", unhex(vector["initiatorToResponderKey"]), initiator.i2r)
    check(where + " responderToInitiatorKey", unhex(vector["responderToInitiatorKey"]), responder.r2i)
    check(where + " keys agree", (initiator.i2r, initiator.r2i), (responder.i2r, responder.r2i))
    check(where + " cipher", vector["cipher"], initiator.cipher)
    check(where + " code", vector["code"], initiator.code)
    check(where + " code on both sides", initiator.code, responder.code)
    check(where + " responder learned", (people[vector["initiator"]].public, unhex(vector["initiatorPayload"])), responder.remote[:2])
    check(where + " initiator learned", (people[vector["responder"]].public, unhex(vector["responderPayload"])), initiator.remote[:2])
    # Each payload is its sender's HELLO, naming the id its handshake key owns (PROTOCOL.md 3.6).
    for role in ("initiator", "responder"):
        check("%s %s payload is a HELLO naming the key's id" % (where, role), people[vector[role]].id,
              hello_payload_peer(unhex(vector[role + "Payload"])))
    if initiator.cipher == "AES-256-GCM" and not aes_available():
        return
    record = seal_record(Direction(initiator.cipher, initiator.i2r), 0x11, unhex(vector["firstRecord"]["plaintext"]))
    check(where + " firstRecord", unhex(vector["firstRecord"]["hex"]), record)


def check_handshake_failure(vector, people):
    where = "handshake failure '%s'" % vector["name"]
    expecting = unhex(vector["expectedPeerID"]) if "expectedPeerID" in vector else None
    side = Handshake(vector["role"], people[vector["identity"]], unhex(vector["ephemeralSecret"]), unhex(vector["payload"]),
                     vector["ciphers"], expecting)
    if vector["role"] == "initiator":
        side.message1()
    failure = None
    try:
        for chunk in vector["input"]:
            side.receive(unhex(chunk))
    except HandshakeFailure as caught:
        failure = caught
    check(where + " error", vector["error"], failure.name if failure else None)
    check(where + " ERROR code sent", vector.get("replyCode"), failure.code if failure else None)


def check_records(vector):
    where = "records '%s'" % vector["name"]
    if vector["cipher"] == "AES-256-GCM" and not aes_available():
        SKIPPED.append(where)
        return
    interval = vector["rekeyInterval"]
    sealer = Direction(vector["cipher"], unhex(vector["key"]), int(interval["records"]), int(interval["bytes"]))
    stream = b""
    for entry in vector["records"]:
        at = "%s record %s" % (where, entry["sequence"])
        check(at + " sequence", entry["sequence"], str(sealer.sequence))
        check(at + " epoch", entry["epoch"], str(sealer.epoch))
        check(at + " key", unhex(entry["key"]), sealer.key)
        check(at + " nonce", unhex(entry["nonce"]), sealer.nonce())
        plaintext = unhex(entry["plaintext"])
        if entry["type"] == "PADDED":
            record = seal_record(sealer, 0x13, padded_plaintext(plaintext, int(entry["padding"])))
        else:
            record = seal_record(sealer, 0x11 if entry["type"] == "RECORD" else 0x12, plaintext)
        check(at + " bytes", unhex(entry["hex"]), record)
        stream += record
    check(where + " stream", unhex(vector["stream"]), stream)
    opener = Direction(vector["cipher"], unhex(vector["key"]), int(interval["records"]), int(interval["bytes"]))
    expected = b"".join(unhex(e["plaintext"]) for e in vector["records"])
    check(where + " opened", (expected, None), open_stream(opener, stream))


def check_record_failure(vector, records):
    interval = records["rekeyInterval"]
    opener = Direction("ChaCha20-Poly1305", unhex(records["key"]), int(interval["records"]), int(interval["bytes"]))
    delivered, error = open_stream(opener, unhex(vector["stream"]))
    check("record failure '%s'" % vector["name"], (unhex(vector["delivered"]), vector["error"]), (delivered, error))


def check_envelope(vector, people):
    where = "envelope '%s'" % vector["name"]
    origin = people[vector["origin"]]
    recipients = [people[name] for name in vector["recipients"]]
    key, body = unhex(vector["contentKey"]), unhex(vector["body"])
    e_secret = unhex(vector["ephemeralSecret"])
    e_public = sodium.crypto_scalarmult_base(e_secret)
    sealed = bytes([2, vector["flags"]]) + e_public + MAC(key, b"nearby-v2-content-key")
    for person in recipients:
        x = sodium.crypto_sign_ed25519_pk_to_curve25519(person.public)
        nonce = H(b"nearby-v2-wrap-nonce", e_public, x, size=24)
        sealed += sodium.crypto_box_easy(key, nonce, x, e_secret)
    sealed += sodium.crypto_aead_chacha20poly1305_ietf_encrypt(body, b"", ZERO_NONCE, key)
    signed = b"nearby-v2-envelope" + origin.id + u64(int(vector["messageID"])) + u64(int(vector["timestamp"])) \
        + u16(len(recipients)) + b"".join(p.id for p in recipients) + H(sealed, size=64)
    sealed += sign(origin.seed, signed)
    check(where + " ephemeralPublic", unhex(vector["ephemeralPublic"]), e_public)
    check(where + " sealed", unhex(vector["sealed"]), sealed)
    # The MESSAGE frame that carries it (PROTOCOL.md 4.5): the clear fields, then the envelope.
    message = u64(int(vector["messageID"])) + origin.id + u64(int(vector["timestamp"])) + bytes([vector["hopLimit"]]) \
        + u16(len(recipients)) + b"".join(p.id for p in recipients) + u32(len(sealed)) + sealed
    check(where + " MESSAGE frame", unhex(vector["message"]), frame(0x05, message))
    # Each recipient opens it the way the specification says, with crypto_box_open_easy.
    for index, person in enumerate(recipients):
        _, secret = sodium.crypto_sign_seed_keypair(person.seed)
        x_secret = sodium.crypto_sign_ed25519_sk_to_curve25519(secret)
        x_public = sodium.crypto_sign_ed25519_pk_to_curve25519(person.public)
        wrap = sealed[66 + 48 * index:114 + 48 * index]
        opened_key = sodium.crypto_box_open_easy(wrap, H(b"nearby-v2-wrap-nonce", e_public, x_public, size=24), e_public, x_secret)
        check("%s key for recipient %d" % (where, index), key, opened_key)
        sealed_body = sealed[66 + 48 * len(recipients):-64]
        check("%s body for recipient %d" % (where, index), body,
              sodium.crypto_aead_chacha20poly1305_ietf_decrypt(sealed_body, b"", ZERO_NONCE, opened_key))
    check(where + " signature verifies", True, verify(origin.public, sealed[-64:], signed))


def check_receipt(vector, people):
    origin, recipient = people[vector["origin"]], people[vector["recipient"]]
    ids = [int(i) for i in vector["messageIDs"]]
    fields = origin.id + recipient.id + u16(len(ids)) + b"".join(u64(i) for i in ids)
    signature = sign(recipient.seed, b"nearby-v2-receipt" + fields)
    check("receipt signature", unhex(vector["signature"]), signature)
    check("receipt bytes", unhex(vector["hex"]), fields + signature)
    # As it travels (PROTOCOL.md 4.6, 9.5): a DELIVERED frame whose payload ends with the signature.
    check("receipt DELIVERED frame", unhex(vector["frame"]), frame(0x06, fields + signature))


def main():
    with open(os.path.join(HERE, "crypto.json")) as f:
        data = json.load(f)
    check("protocolVersion", 2, data["protocolVersion"])
    people = check_identities(data)
    for vector in data["handshakes"]:
        check_handshake(vector, people)
    for vector in data["handshakeFailures"]:
        check_handshake_failure(vector, people)
    for vector in data["records"]:
        check_records(vector)
    chacha = next(v for v in data["records"] if v["cipher"] == "ChaCha20-Poly1305")
    for vector in data["recordFailures"]:
        check_record_failure(vector, chacha)
    for vector in data["envelopes"]:
        check_envelope(vector, people)
    for vector in data["receipts"]:
        check_receipt(vector, people)
    for skipped in SKIPPED:
        print("skipped: %s" % skipped)
    if FAILURES:
        print("\n".join(FAILURES))
        print("check_crypto: %d of %d checks FAILED" % (len(FAILURES), CHECKS[0]))
        return 1
    print("check_crypto: all %d checks passed" % CHECKS[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
