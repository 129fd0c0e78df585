import NearbyCore

// The values of file transfers, defined next to the protocol machinery in NearbyCore and
// made part of `import Nearby` here (as PublicTypes.swift does for the others).

/// Identifies a transfer: 128 random bits, the same across reconnections and restarts.
public typealias TransferID = NearbyCore.TransferID
/// One file or empty folder of an offer.
public typealias OfferedFile = NearbyCore.OfferedFile
/// Files a peer offers us: accept or refuse them.
public typealias IncomingOffer = NearbyCore.IncomingOffer
/// File-transfer news on the event stream.
public typealias TransferEvent = NearbyCore.TransferEvent
/// Where a transfer stands.
public typealias TransferProgress = NearbyCore.TransferProgress
/// Which way a transfer goes.
public typealias TransferDirection = NearbyCore.TransferDirection
/// How a transfer ended.
public typealias TransferEnd = NearbyCore.TransferEnd
/// Why a transfer ended early (the CANCEL reason).
public typealias TransferCancelReason = NearbyCore.TransferCancelReason
/// A file that arrived, or that the receiver verified.
public typealias TransferredFile = NearbyCore.TransferredFile
/// Why a transfer could not be started or answered.
public typealias TransferError = NearbyCore.TransferError
