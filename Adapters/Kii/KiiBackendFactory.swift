import MBaaSCore

/// Opens ``KiiBackend``s from `kii://` and `kii+http://` URLs (see ``KiiConfiguration`` for the form).
public struct KiiBackendFactory: BackendFactory {
    public init() {}
    public var schemes: [String] { ["kii"] }
    public var adapterName: String { "kii" }
    /// `clientID` turns on admin mode (the app admin's client credentials).
    public var administrativeOptions: Set<String> { ["clientID"] }
    /// The generic profile plus Kii's application headers (`X-Kii-AppID`, `X-Kii-AppKey`: secret) and its SDK
    /// header (`X-Kii-SDK`: volatile). The access token (`access_token`) is a generic name already.
    public var wireProfile: WireProfile {
        WireProfile.generic.merging(WireProfile(
            secretHeaders: ["X-Kii-AppKey", "X-Kii-AppID"], volatileHeaders: ["X-Kii-SDK"]))
    }

    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        try KiiBackend(url: url, context: context)
    }
}
