import CSodium
import NearbyCore

/// End-to-end protection of a message that may pass through relays: a relay routes it but
/// can neither read nor alter it, and the origin cannot show different recipients
/// different contents.
///
/// The sealed bytes (the body of a MESSAGE frame) are
/// `format(1) | flags(1) | ephemeral(32) | commitment(32) | wraps(48 × n) | body+tag | signature(64)`:
/// the body is encrypted once (ChaCha20-Poly1305-IETF, zero nonce) under a random content
/// key `K`; `commitment = MAC(K, "nearby-v2-content-key")` (keyed BLAKE2b-256); for each recipient, in the
/// order of the MESSAGE's recipient list, `K` is encrypted with `crypto_box_easy` from a
/// per-message ephemeral X25519 key to the recipient's X25519 key (converted from its
/// Ed25519 key); the origin signs the MESSAGE fields (origin, id, timestamp, recipients)
/// and the BLAKE2b-512 of everything before the signature.
package enum Envelope {
  /// The format byte this version writes and reads.
  package static let format: UInt8 = 2
  /// Bytes that do not depend on the body or the recipients.
  package static let fixedOverhead = 2 + 32 + 32 + AEAD.tagCount + 64
  /// Bytes per recipient (a wrapped content key).
  package static let wrapCount = Int(crypto_box_MACBYTES) + 32

  /// The fields of the MESSAGE frame the origin's signature covers (the hop limit is not
  /// covered: relays change it).
  package struct Header: Hashable, Sendable {
    /// The peer that wrote the message (MESSAGE `sender`).
    package var origin: PeerID
    /// The origin's id for the message.
    package var messageID: UInt64
    /// Milliseconds since 1970, the origin's clock.
    package var timestamp: UInt64
    /// Every recipient, in wire order (a message to everyone lists them all).
    package var recipients: [PeerID]

    /// The fields as they are in the MESSAGE frame.
    package init(origin: PeerID, messageID: UInt64, timestamp: UInt64, recipients: [PeerID]) {
      self.origin = origin
      self.messageID = messageID
      self.timestamp = timestamp
      self.recipients = recipients
    }
  }

  /// Bits of the flags byte (signed; unknown bits are kept and ignored).
  package struct Flags: OptionSet, Hashable, Sendable {
    /// The byte as it is on the wire.
    package let rawValue: UInt8
    /// Any byte: unknown bits are kept.
    package init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The origin sent the message to everyone it could reach (the list is then all of them).
    package static let toEveryone = Flags(rawValue: 1)
  }

  /// An opened message.
  package struct Opened: Hashable, Sendable {
    /// The plaintext body.
    package var body: [UInt8]
    /// The origin's flags (signed).
    package var flags: Flags
  }

  /// The sealed size for a body of `bodyCount` bytes to `recipientCount` recipients.
  package static func sealedCount(bodyCount: Int, recipientCount: Int) -> Int {
    fixedOverhead + recipientCount * wrapCount + bodyCount
  }

  /// Seals `body` for the recipients of `header`.
  /// - Parameters:
  ///   - recipientKeys: the recipients' public keys, in the order of `header.recipients`;
  ///     each must own its id.
  ///   - origin: the origin's key pair; it must own `header.origin`.
  ///   - random: draws the content key and the ephemeral key.
  /// - Throws: ``EnvelopeError`` when a key does not match its id or a limit is exceeded.
  package static func seal(
    _ body: [UInt8], header: Header, flags: Flags = [], recipientKeys: [IdentityPublicKey], origin: IdentityKeyPair,
    random: inout some CryptoRandom
  ) throws(EnvelopeError) -> [UInt8] {
    guard origin.publicKey.owns(header.origin) else { throw .originKeyMismatch(origin: header.origin, keyOwner: origin.peerID) }
    try checkRecipients(header.recipients)
    guard body.count <= ProtocolLimits.maximumBodyLength else { throw .bodyTooLarge(body.count) }
    guard recipientKeys.count == header.recipients.count else {
      throw .invalidRecipients("\(recipientKeys.count) keys for \(header.recipients.count) recipients")
    }
    var recipientX25519: [[UInt8]] = []
    for (id, key) in zip(header.recipients, recipientKeys) {
      guard key.owns(id) else { throw .recipientKeyMismatch(recipient: id, keyOwner: key.peerID) }
      guard let x25519 = key.x25519PublicKey() else { throw .invalidRecipientKey(id) }
      recipientX25519.append(x25519)
    }
    let contentKey = random.secret(AEAD.keyCount)
    let ephemeral = EphemeralKeyPair.generate(using: &random)
    var sealed: [UInt8] = [format, flags.rawValue]
    sealed.reserveCapacity(sealedCount(bodyCount: body.count, recipientCount: header.recipients.count))
    sealed += ephemeral.publicKey
    sealed += Blake2b.hash([SecureProtocol.Label.contentKey], key: contentKey)
    for x25519 in recipientX25519 {
      sealed += wrap(contentKey, to: x25519, from: ephemeral)
    }
    sealed += AEAD.seal(.chacha20Poly1305, key: contentKey, nonce: HandshakeKeySchedule.zeroNonce, additionalData: [], plaintext: body)
    sealed += origin.sign(signedMessage(header: header, sealedPrefix: sealed[...]))
    return sealed
  }

  /// Checks the origin's signature without opening anything: what a relay can do to drop
  /// forgeries, and the first step of ``open(_:header:originKey:recipient:)``.
  /// - Parameter originKey: the origin's public key; it must own `header.origin`.
  package static func verify(_ sealed: [UInt8], header: Header, originKey: IdentityPublicKey) throws(EnvelopeError) -> Flags {
    guard originKey.owns(header.origin) else { throw .originKeyMismatch(origin: header.origin, keyOwner: originKey.peerID) }
    try checkRecipients(header.recipients)
    let minimum = sealedCount(bodyCount: 0, recipientCount: header.recipients.count)
    guard sealed.count >= minimum else {
      throw .malformed("\(sealed.count) bytes, fewer than the \(minimum) of an empty body to \(header.recipients.count) recipients")
    }
    guard sealed[0] == format else { throw .unsupportedFormat(sealed[0]) }
    let signature = Array(sealed[(sealed.count - 64)...])
    let signed = signedMessage(header: header, sealedPrefix: sealed[..<(sealed.count - 64)])
    guard originKey.isValidSignature(signature, for: signed) else { throw .invalidSignature }
    return Flags(rawValue: sealed[1])
  }

  /// Verifies and opens a message sent to `recipient`.
  /// - Parameters:
  ///   - originKey: the origin's public key (from the roster or a key directory); it must
  ///     own `header.origin`.
  ///   - recipient: our key pair.
  /// - Throws: ``EnvelopeError`` naming the first check that failed.
  package static func open(_ sealed: [UInt8], header: Header, originKey: IdentityPublicKey, recipient: IdentityKeyPair) throws(EnvelopeError)
    -> Opened
  {
    let flags = try verify(sealed, header: header, originKey: originKey)
    guard let index = header.recipients.firstIndex(of: recipient.peerID) else { throw .notARecipient(recipient.peerID) }
    let ephemeral = Array(sealed[2..<34])
    let commitment = Array(sealed[34..<66])
    let wrapStart = 66 + index * wrapCount
    let wrapped = Array(sealed[wrapStart..<(wrapStart + wrapCount)])
    let bodyStart = 66 + header.recipients.count * wrapCount
    let sealedBody = Array(sealed[bodyStart..<(sealed.count - 64)])
    guard let contentKey = unwrap(wrapped, ephemeral: ephemeral, recipient: recipient) else { throw .keyUnwrapFailed }
    guard Sodium.constantTimeEqual(Blake2b.hash([SecureProtocol.Label.contentKey], key: contentKey), commitment) else {
      throw .keyCommitmentMismatch
    }
    guard
      let body = AEAD.open(.chacha20Poly1305, key: contentKey, nonce: HandshakeKeySchedule.zeroNonce, additionalData: [], sealed: sealedBody)
    else { throw .decryptFailed }
    guard body.count <= ProtocolLimits.maximumBodyLength else { throw .bodyTooLarge(body.count) }
    return Opened(body: body, flags: flags)
  }

  /// `"nearby-v2-envelope" || origin || u64 id || u64 timestamp || u16 n || recipients || H64(sealedPrefix)`.
  ///
  /// The envelope is signed through its BLAKE2b-512 rather than whole: Ed25519 hashes what it
  /// signs twice with SHA-512 (and once to verify), which was 37% of all CPU time in a profile
  /// of a file of 128 KiB chunks relayed between two sessions (one pass of BLAKE2b is about a
  /// third of that work here).
  static func signedMessage(header: Header, sealedPrefix: ArraySlice<UInt8>) -> [UInt8] {
    var message = SecureProtocol.Label.envelope
    message.reserveCapacity(message.count + 34 + 16 * header.recipients.count + 64)
    message += header.origin.bytes
    message.append(bigEndian: header.messageID)
    message.append(bigEndian: header.timestamp)
    message.append(bigEndian: UInt16(header.recipients.count))
    for recipient in header.recipients { message += recipient.bytes }
    let hasher = FileHasher(outputCount: 64)
    sealedPrefix.withUnsafeBytes { hasher.update($0) }
    message += hasher.finalize()
    return message
  }

  private static func checkRecipients(_ recipients: [PeerID]) throws(EnvelopeError) {
    guard !recipients.isEmpty else { throw .invalidRecipients("none are listed (list every recipient, also for a message to everyone)") }
    guard recipients.count <= ProtocolLimits.maximumRecipients else {
      throw .invalidRecipients("\(recipients.count) are listed, more than \(ProtocolLimits.maximumRecipients)")
    }
    guard recipients.allSatisfy(\.isValid) else { throw .invalidRecipients("an id is all zeros") }
    guard Set(recipients).count == recipients.count else { throw .invalidRecipients("a recipient is listed twice") }
  }
}
