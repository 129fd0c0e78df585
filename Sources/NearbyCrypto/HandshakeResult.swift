import NearbyCore

/// What a completed handshake established.
package struct HandshakeResult: Sendable {
  /// The peer's long-term key, proven by its signature over this handshake.
  package let remotePublicKey: IdentityPublicKey
  /// The id that key owns.
  package let remotePeerID: PeerID
  /// The peer's application payload (display name, capability bits), authenticated.
  package let remotePayload: [UInt8]
  /// The record cipher both sides announced (AES-256-GCM when both can, else ChaCha20-Poly1305).
  package let cipher: RecordCipher
  /// The key of the records we send (epoch 0).
  package let sendKey: SecretBytes
  /// The key of the records we receive (epoch 0).
  package let receiveKey: SecretBytes
  /// The six digits both people see when nobody is in the middle.
  package let verificationCode: VerificationCode
  /// `h4`, the hash of the whole handshake: equal on both sides, unique to this session
  /// (usable as a channel binding).
  package let transcriptHash: [UInt8]

  /// The sealer of our direction's records.
  /// - Parameter rekeyInterval: the protocol's interval; tests pass smaller ones.
  package func makeSealer(rekeyInterval: RekeyInterval = .standard) -> RecordSealer {
    RecordSealer(cipher: cipher, key: sendKey, rekeyInterval: rekeyInterval)
  }

  /// The opener of the peer's records.
  /// - Parameter rekeyInterval: the protocol's interval; tests pass smaller ones.
  package func makeOpener(rekeyInterval: RekeyInterval = .standard) -> RecordOpener {
    RecordOpener(cipher: cipher, key: receiveKey, rekeyInterval: rekeyInterval)
  }
}
