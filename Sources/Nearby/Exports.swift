// The public API of Nearby re-exports the value types of the core.
@_exported import NearbyCore
