import Crypto
public import Foundation
public import MBaaSCore
import NIOSSL
import SwiftASN1
import X509
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The emulator's identity over HTTPS: a certificate chain (the server's certificate first) and its private key, in
/// PEM. ``EmulatorServer`` given one serves TLS (HummingbirdTLS on swift-nio-ssl) instead of plain HTTP.
///
/// ```swift
/// let tls = try EmulatorTLS.selfSigned(directory: "/tmp/mbaas-tls")   // writes ca.pem, server.pem, server-key.pem
/// let running = try await EmulatorServer(dialect: dialect, tls: tls).start()
/// // running.baseURL is https://127.0.0.1:PORT; clients trust tls.caCertificatePath
/// ```
///
/// # Contract
/// - ``init(certificateChainPEM:privateKeyPEM:)`` and ``load(certificateFile:keyFile:)`` check what they are given
///   before any socket is opened: a chain with no certificate, a key that is not a PEM private key, or a key that
///   does not belong to the first certificate is ``MBaaSCore/MBaaSError/Kind/invalidRequest`` naming the file and
///   the problem (`mbaas serve` exits 2); a file that cannot be read is ``MBaaSCore/MBaaSError/Kind/localIO``
///   (exit 7).
/// - ``selfSigned(directory:hosts:validFor:now:)`` makes a new certificate authority (P-256, swift-crypto) and a
///   server certificate it signs for `127.0.0.1`, `::1` and `localhost` (subject alternative names, `serverAuth`),
///   written with swift-certificates into the directory as `ca.pem`, `server.pem` (the server's certificate, then
///   the CA's) and `server-key.pem` (mode 0600). The CA's private key is never written: nothing but this one server
///   certificate can ever be signed by the CA a client was told to trust. Each call makes a new CA.
public struct EmulatorTLS: Sendable {
    /// The PEM certificates, the server's first.
    public let certificateChainPEM: String
    /// The PEM private key of the first certificate.
    public let privateKeyPEM: String
    /// The file of the CA certificate clients should trust, when ``selfSigned(directory:hosts:validFor:now:)`` wrote
    /// one; `nil` for a certificate brought with `--tls-cert`.
    public private(set) var caCertificatePath: String?

    /// The names of the files ``selfSigned(directory:hosts:validFor:now:)`` writes.
    public static let caFileName = "ca.pem"
    public static let certificateFileName = "server.pem"
    public static let keyFileName = "server-key.pem"

    let certificates: [NIOSSLCertificate]
    let key: NIOSSLPrivateKey

    /// Checks the chain and the key (see the type's contract). `source` names them in errors (file names).
    public init(certificateChainPEM: String, privateKeyPEM: String,
                source: (certificate: String, key: String) = ("the certificate", "the private key")) throws(MBaaSError) {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(Array(certificateChainPEM.utf8))
        } catch {
            throw MBaaSError(.invalidRequest, "\(source.certificate) is not a PEM certificate chain (\(error))")
        }
        guard !certificates.isEmpty else {
            throw MBaaSError(.invalidRequest, "\(source.certificate) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
        } catch {
            throw MBaaSError(.invalidRequest, "\(source.key) is not a PEM private key (an encrypted key is not supported; \(error))")
        }
        // The key must be the first certificate's: compared on the public keys where swift-certificates reads both;
        // BoringSSL checks the rest when the context is made below.
        if let leaf = try? Certificate(pemEncoded: Self.firstPEMBlock(certificateChainPEM) ?? ""),
           let parsedKey = try? Certificate.PrivateKey(pemEncoded: privateKeyPEM), parsedKey.publicKey != leaf.publicKey {
            throw MBaaSError(.invalidRequest, "\(source.key) does not belong to the first certificate of \(source.certificate)")
        }
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
        self.certificates = certificates
        self.key = key
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw MBaaSError(.invalidRequest, "\(source.certificate) and \(source.key) cannot serve TLS together (\(error))")
        }
    }

    /// Reads a PEM certificate chain and its PEM private key from files (`mbaas serve --tls-cert FILE --tls-key FILE`).
    public static func load(certificateFile: String, keyFile: String) throws(MBaaSError) -> EmulatorTLS {
        func read(_ path: String, _ what: String) throws(MBaaSError) -> String {
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
                let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
                throw MBaaSError(.localIO, "\(what) \(path) \(reason)")
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw MBaaSError(.invalidRequest, "\(what) \(path) is not PEM text (binary DER is not read: convert it to PEM)")
            }
            return text
        }
        let chain = try read(certificateFile, "--tls-cert")
        let key = try read(keyFile, "--tls-key")
        return try EmulatorTLS(certificateChainPEM: chain, privateKeyPEM: key,
                               source: ("--tls-cert \(certificateFile)", "--tls-key \(keyFile)"))
    }

    /// Writes a new CA and a server certificate signed by it into `directory` (created 0700 if missing) and returns
    /// the identity, with ``caCertificatePath`` set. See the type's contract.
    /// - Parameters:
    ///   - hosts: the names and addresses the certificate is for (IP addresses are written as such).
    ///   - validFor: how long both certificates are valid, from an hour before `now` (clock skew).
    public static func selfSigned(directory: String, hosts: [String] = ["127.0.0.1", "::1", "localhost"],
                                  validFor: TimeInterval = 30 * 86_400, now: Date = Date()) throws(MBaaSError) -> EmulatorTLS {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw MBaaSError(.invalidRequest, "--tls-self-signed \(directory) is a file; give a directory to write the certificates into")
            }
        } else {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw MBaaSError(.localIO, "cannot create the directory \(directory) for --tls-self-signed: \(error.localizedDescription)")
            }
        }
        let (caPEM, serverPEM, keyPEM): (String, String, String)
        do {
            (caPEM, serverPEM, keyPEM) = try makeCertificates(hosts: hosts, validFor: validFor, now: now)
        } catch {
            throw MBaaSError(.internal, "cannot make the self-signed certificates: \(error)")
        }
        let dir = URL(fileURLWithPath: directory)
        let caPath = dir.appendingPathComponent(caFileName).path
        let files: [(String, String, mode_t)] = [
            (caPath, caPEM, 0o644),
            (dir.appendingPathComponent(certificateFileName).path, serverPEM + caPEM, 0o644),
            (dir.appendingPathComponent(keyFileName).path, keyPEM, 0o600),
        ]
        for (path, text, mode) in files {
            do {
                try writeWhole(Data(text.utf8), to: path, through: path + ".partial")
            } catch {
                throw MBaaSError(.localIO, "cannot write \(path) for --tls-self-signed: \(MBaaSError.wrap(error).message)")
            }
            if mode != 0o600 { chmod(path, mode) }
        }
        var tls = try EmulatorTLS(certificateChainPEM: serverPEM + caPEM, privateKeyPEM: keyPEM)
        tls.caCertificatePath = caPath
        return tls
    }

    /// The CA, server certificate and server key, in PEM.
    static func makeCertificates(hosts: [String], validFor: TimeInterval, now: Date) throws -> (ca: String, server: String, key: String) {
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            OrganizationName("MBaaSKit")
            CommonName("mbaas serve test CA \(UUID().uuidString.prefix(8))")
        }
        let notBefore = now.addingTimeInterval(-3600)
        let notAfter = now.addingTimeInterval(validFor)
        let caPublic = Certificate.PrivateKey(caKey).publicKey
        let caKeyID = keyIdentifier(caKey.publicKey)
        let ca = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: caPublic,
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: caName, subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(keyIdentifier: caKeyID)
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey))

        let serverKey = P256.Signing.PrivateKey()
        let serverName = try DistinguishedName {
            OrganizationName("MBaaSKit")
            CommonName(hosts.first ?? "localhost")
        }
        let names: [GeneralName] = hosts.map { host in
            if let bytes = ipAddressBytes(host) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(bytes))) }
            return .dnsName(host)
        }
        let server = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PrivateKey(serverKey).publicKey,
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: caName, subject: serverName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
                SubjectKeyIdentifier(keyIdentifier: keyIdentifier(serverKey.publicKey))
                AuthorityKeyIdentifier(keyIdentifier: caKeyID)
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey))
        return (try ca.serializeAsPEM().pemString + "\n", try server.serializeAsPEM().pemString + "\n", serverKey.pemRepresentation + "\n")
    }

    /// The SHA-1 of the public key's point, as RFC 5280 4.2.1.2 (1) derives key identifiers.
    static func keyIdentifier(_ key: P256.Signing.PublicKey) -> ArraySlice<UInt8> {
        ArraySlice(Insecure.SHA1.hash(data: key.x963Representation))
    }

    /// The 4 or 16 bytes of an IPv4 or IPv6 address, or `nil` for a name.
    static func ipAddressBytes(_ host: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// The first `-----BEGIN CERTIFICATE-----` block of a PEM text.
    static func firstPEMBlock(_ text: String) -> String? {
        guard let start = text.range(of: "-----BEGIN CERTIFICATE-----"),
              let end = text.range(of: "-----END CERTIFICATE-----", range: start.upperBound..<text.endIndex) else { return nil }
        return String(text[start.lowerBound..<end.upperBound])
    }

    /// The server side of swift-nio-ssl's configuration (TLS 1.2 and up).
    var configuration: TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }
}
