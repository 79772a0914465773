public import MBaaSCore
import MBaaSKiiWire

/// Opens ``KiiBackend``s from `kii://` and `kii+http://` URLs (see ``KiiConfiguration`` for the form).
public struct KiiBackendFactory: BackendFactory {
    public init() {}
    public var schemes: [String] { ["kii"] }
    public var adapterName: String { "kii" }
    /// `clientID` turns on admin mode (the app admin's client credentials).
    public var administrativeOptions: Set<String> { ["clientID"] }
    /// ``WireProfile/kii``: the generic profile plus Kii's application headers (secret) and SDK header (volatile).
    public var wireProfile: WireProfile { .kii }

    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        try KiiBackend(url: url, context: context)
    }
}
