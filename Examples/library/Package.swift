// swift-tools-version:6.0
// A program that uses Nearby as an outside package would: through the `Nearby` library
// product only (here by path; elsewhere `.package(url: ..., from: ...)`).
import PackageDescription

let package = Package(
  name: "hello-nearby",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(name: "Nearby", path: "../..")
  ],
  targets: [
    .executableTarget(
      name: "hello-nearby",
      dependencies: [.product(name: "Nearby", package: "Nearby")],
      swiftSettings: [.swiftLanguageMode(.v6)]
    )
  ]
)
