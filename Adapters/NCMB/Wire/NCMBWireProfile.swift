public import MBaaSCore

extension WireProfile {
    /// NCMB's wire protocol as record/replay tools see it (``NCMBBackendFactory/wireProfile``).
    ///
    /// - Secret headers: the application key, the request signature and the session token
    ///   (`X-NCMB-Application-Key`, `X-NCMB-Signature`, `X-NCMB-Apps-Session-Token`; ``NCMBSigner/Header``).
    /// - Volatile headers: the timestamp and everything signed over it (`X-NCMB-Timestamp`, `X-NCMB-Signature`,
    ///   `X-NCMB-Response-Signature`) and the vendor SDKs' version headers (`X-NCMB-SDK-Version`,
    ///   `X-NCMB-OS-Version`). A cassette authored with a fixed key and a pinned clock pins the signature and the
    ///   timestamp so that replay checks them anyway.
    /// - Token fields: the login's `sessionToken` is a generic name already.
    /// - Every NCMB header starts with `X-`, which recordings keep anyway: no extra prefix. URLs need a host.
    public static let ncmb = WireProfile.generic.merging(WireProfile(
        secretHeaders: [NCMBSigner.Header.applicationKey, NCMBSigner.Header.signature, NCMBSigner.Header.sessionToken],
        volatileHeaders: [NCMBSigner.Header.timestamp, NCMBSigner.Header.signature,
                          NCMBSigner.Header.responseSignature, "X-NCMB-SDK-Version", "X-NCMB-OS-Version"]))
}
