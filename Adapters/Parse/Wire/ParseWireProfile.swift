public import MBaaSCore

/// The `X-Parse-…` header names.
public enum ParseHeader {
    public static let applicationId = "X-Parse-Application-Id"
    public static let restAPIKey = "X-Parse-REST-API-Key"
    public static let masterKey = "X-Parse-Master-Key"
    public static let sessionToken = "X-Parse-Session-Token"
    public static let revocableSession = "X-Parse-Revocable-Session"
    public static let requestId = "X-Parse-Request-Id"
    public static let clientVersion = "X-Parse-Client-Version"
    public static let installationId = "X-Parse-Installation-Id"
}

extension WireProfile {
    /// Parse Server's wire protocol as record/replay tools see it (``ParseBackendFactory/wireProfile``).
    ///
    /// - Secret headers: the application id, the REST key, the master key and the session token.
    /// - Volatile headers: the request id (a fresh UUID per request, kept across retries), the SDK version and the
    ///   installation id.
    /// - Token fields: `sessionToken` is a generic name already; `masterKey` a generic secret field.
    public static let parse = WireProfile.generic.merging(WireProfile(
        secretHeaders: [ParseHeader.applicationId, ParseHeader.restAPIKey, ParseHeader.masterKey,
                        ParseHeader.sessionToken],
        volatileHeaders: [ParseHeader.requestId, ParseHeader.clientVersion, ParseHeader.installationId]))
}
