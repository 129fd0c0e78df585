import NearbyCore
import Synchronization

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
  /// Whether the peer announced that it reads PADDED records (bit 2 of its cipher byte).
  package let peerReadsPaddedRecords: Bool
  /// The key of the records we send (epoch 0).
  package let sendKey: SecretBytes
  /// The key of the records we receive (epoch 0).
  package let receiveKey: SecretBytes
  /// The six digits both people see when nobody is in the middle.
  package let verificationCode: VerificationCode
  /// `h4`, the hash of the whole handshake: equal on both sides, unique to this session
  /// (usable as a channel binding).
  package let transcriptHash: [UInt8]
  /// Shared by every copy of the result: set once a sealer was made.
  private let sealerMade = SealerClaim()

  /// Made by ``Handshake`` on completion (and by tests).
  package init(
    remotePublicKey: IdentityPublicKey, remotePeerID: PeerID, remotePayload: [UInt8], cipher: RecordCipher,
    peerReadsPaddedRecords: Bool = false, sendKey: SecretBytes, receiveKey: SecretBytes, verificationCode: VerificationCode,
    transcriptHash: [UInt8]
  ) {
    self.remotePublicKey = remotePublicKey
    self.remotePeerID = remotePeerID
    self.remotePayload = remotePayload
    self.cipher = cipher
    self.peerReadsPaddedRecords = peerReadsPaddedRecords
    self.sendKey = sendKey
    self.receiveKey = receiveKey
    self.verificationCode = verificationCode
    self.transcriptHash = transcriptHash
  }

  /// The sealer of our direction's records. Call it once per handshake (it traps the
  /// second time, also on a copy of the result): two sealers would reuse nonces.
  ///
  /// It pads short records (``RecordSealer/padsShortRecords``) when the peer reads PADDED
  /// records and the cipher is AES-256-GCM, which libsodium 1.0.18 seals and opens in 98 and
  /// 111 ns at 128 bytes, against 182 and 191 ns at 124 (a 64-byte message): its fast path
  /// takes 128 bytes at a time. ChaCha20-Poly1305 has no such step, and padding would only
  /// add bytes to encrypt.
  /// - Parameter rekeyInterval: the protocol's interval; tests pass smaller ones.
  package func makeSealer(rekeyInterval: RekeyInterval = .standard) -> RecordSealer {
    precondition(sealerMade.claim(), "makeSealer() called twice for one handshake: two sealers would reuse nonces")
    return RecordSealer(
      cipher: cipher, key: sendKey, rekeyInterval: rekeyInterval, padsShortRecords: peerReadsPaddedRecords && cipher == .aes256GCM)
  }

  /// The opener of the peer's records.
  /// - Parameter rekeyInterval: the protocol's interval; tests pass smaller ones.
  package func makeOpener(rekeyInterval: RekeyInterval = .standard) -> RecordOpener {
    RecordOpener(cipher: cipher, key: receiveKey, rekeyInterval: rekeyInterval)
  }
}

/// A flag that can be set once, from any thread.
private final class SealerClaim: Sendable {
  private let claimed = Mutex(false)

  /// `true` the first time only.
  func claim() -> Bool {
    claimed.withLock { claimed in
      defer { claimed = true }
      return !claimed
    }
  }
}
