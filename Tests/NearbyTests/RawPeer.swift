import Foundation
import Nearby
import NearbyCore
import NearbyLab
import NearbyTestSupport

/// Completes the handshake and an accepted invitation, then says nothing more (a pulled
/// cable). It does not read either, so what is sent to it piles up.
final class SilentPeer: @unchecked Sendable {
  let peer: SecureTestPeer

  static func connect(to port: UInt16, name: String = "silent", receiveBuffer: Int32? = nil) async throws -> SilentPeer {
    let peer = try SecureTestPeer(port: port, receiveBuffer: receiveBuffer)
    try await peer.handshakeInBackground(payload: SecureTestPeer.helloPayload(peer.hello(name: name)))
    peer.write(.invite(Frame.Invite(invitationID: 1, timeoutMilliseconds: 5000, context: [])))
    return SilentPeer(peer: peer)
  }

  private init(peer: SecureTestPeer) { self.peer = peer }

  var id: PeerID { peer.peerID }
}
