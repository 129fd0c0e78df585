/// A peer that the version 2 handshake authenticated (PROTOCOL.md): it proved that it holds
/// the secret key of `publicKey`, and `peerID` is the id that key owns. The transport hands
/// it to the session, which reads the peer's HELLO from `payload`.
package struct AuthenticatedPeer: Hashable, Sendable {
  /// The peer's Ed25519 public key (32 bytes).
  package let publicKey: [UInt8]
  /// The id `publicKey` owns (derived from it, never claimed).
  package let peerID: PeerID
  /// The application payload of its handshake: an encoded HELLO frame.
  package let payload: [UInt8]
  /// The six-digit code both people can compare, the same on both sides unless someone in
  /// the middle terminated the connection.
  package let verificationCode: String

  package init(publicKey: [UInt8], peerID: PeerID, payload: [UInt8], verificationCode: String) {
    self.publicKey = publicKey
    self.peerID = peerID
    self.payload = payload
    self.verificationCode = verificationCode
  }
}
