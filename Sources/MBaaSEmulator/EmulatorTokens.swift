import Crypto
import Foundation
import MBaaSCore

/// Tokens that every instance serving one app accepts without remembering them: a random nonce followed by its
/// HMAC-SHA256 under a key derived from the app's credentials, which every instance is started with.
///
/// Used for the tokens a vendor issues outside its user sessions (Kii's app-admin token, AppPot's anonymous token),
/// so that a token issued by one `mbaas serve` process is accepted by another over the same store, and by the
/// same process after a restart. User sessions are not these: they live in the ``MBaaSCore/ServerStore`` (revocable).
///
/// Forging one needs the credentials it is keyed with; those credentials alone already obtain one from the vendor's
/// token endpoint, so a token grants nothing its issuing endpoint would not. They do not expire and cannot be
/// revoked one by one (changing the credentials revokes them all), as the in-memory tokens they replace never
/// expired either.
struct EmulatorTokens: Sendable {
    private let key: SymmetricKey
    private let prefix: String

    /// `purpose` separates the keys of different token kinds; `credentials` are what the instance was started with.
    init(prefix: String, purpose: String, credentials: [String]) {
        var material = Data("mbaas-emulator-token\u{0}\(purpose)".utf8)
        for c in credentials { material.append(0); material.append(contentsOf: Data(c.utf8)) }
        key = SymmetricKey(data: SHA256.hash(data: material))
        self.prefix = prefix
    }

    /// A new token: the prefix, 32 hexadecimal digits of nonce (128 random bits), 64 of signature.
    func issue() -> String {
        var generator = SystemRandomNumberGenerator()
        let nonce = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }.lowercaseHex
        return prefix + nonce + Data(HMAC<SHA256>.authenticationCode(for: Data(nonce.utf8), using: key)).lowercaseHex
    }

    /// Whether `token` was issued with this key (by any instance), compared in constant time.
    func accepts(_ token: String) -> Bool {
        guard token.hasPrefix(prefix) else { return false }
        let body = Array(token.utf8.dropFirst(prefix.utf8.count))
        guard body.count == 96 else { return false }
        let nonce = body[0..<32], mac = body[32..<96]
        guard let code = Self.bytes(fromHex: mac) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: Data(nonce), using: key)
    }

    private static func bytes(fromHex hex: ArraySlice<UInt8>) -> [UInt8]? {
        func digit(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            guard let hi = digit(hex[i]), let lo = digit(hex[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
