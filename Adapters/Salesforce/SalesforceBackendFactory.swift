public import MBaaSCore
import MBaaSSalesforceWire

/// Opens ``SalesforceBackend``s from `salesforce://` and `salesforce+http://` URLs (see ``SalesforceConfiguration``).
public struct SalesforceBackendFactory: BackendFactory {
    public init() {}
    public var schemes: [String] { ["salesforce"] }
    public var adapterName: String { "salesforce" }
    public var administrativeOptions: Set<String> { [] }
    /// ``WireProfile/salesforce``.
    public var wireProfile: WireProfile { .salesforce }

    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        try SalesforceBackend(url: url, context: context)
    }
}
