import NearbyCore
import Testing

@Suite("Per-source admission of connections")
struct SourceAdmissionTests {
  @Test func aSourceGetsItsLimitAndNoMoreWhileTheOthersStillGetIn() {
    var admission = SourceAdmission(maximumPerSource: 3)
    let pending: (ConnectionID) -> Bool = { _ in true }
    for index in 1...3 { #expect(admission.admit(ConnectionID(UInt64(index)), from: "10.0.0.9", stillPending: pending) == nil) }
    let refusal = admission.admit(ConnectionID(4), from: "10.0.0.9", stillPending: pending)
    #expect(refusal == "3 connections from 10.0.0.9 are still being set up, the most one host may have; try again later")
    #expect(admission.admit(ConnectionID(5), from: "10.0.0.10", stillPending: pending) == nil)
    #expect(admission.pendingCount(from: "10.0.0.9") == 3)
  }

  @Test func connectionsThatAreConnectedOrClosedStopCounting() {
    var admission = SourceAdmission(maximumPerSource: 2)
    var settled: Set<ConnectionID> = []
    #expect(admission.admit(ConnectionID(1), from: "a", stillPending: { !settled.contains($0) }) == nil)
    #expect(admission.admit(ConnectionID(2), from: "a", stillPending: { !settled.contains($0) }) == nil)
    #expect(admission.admit(ConnectionID(3), from: "a", stillPending: { !settled.contains($0) }) != nil)
    settled.insert(ConnectionID(1))
    #expect(admission.admit(ConnectionID(4), from: "a", stillPending: { !settled.contains($0) }) == nil)
    admission.settle(ConnectionID(2))
    #expect(admission.pendingCount(from: "a") == 1)
  }

  @Test func theTableStaysAsSmallAsWhatItCounts() {
    var admission = SourceAdmission(maximumPerSource: 4)
    // Many sources, each one connection that is connected at once: swept as the table grows.
    for index in 0..<10_000 {
      #expect(admission.admit(ConnectionID(UInt64(index)), from: "host\(index)", stillPending: { $0.rawValue == UInt64(index) }) == nil)
    }
    #expect(admission.trackedCount < 200, "\(admission.trackedCount) entries")
  }
}
