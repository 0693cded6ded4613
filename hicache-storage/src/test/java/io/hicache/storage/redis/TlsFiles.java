package io.hicache.storage.redis;

import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

import java.io.IOException;
import java.io.Writer;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;

/**
 * A throw-away CA and a server certificate for 127.0.0.1 and localhost signed by it, valid for two days, written
 * as PEM files (certificates and PKCS#8 keys, as redis-server reads them). Made in Java with BouncyCastle's
 * certificate builder; EC P-256 keys, quick to make.
 */
record TlsFiles(Path ca, Path cert, Path key) {

    static TlsFiles create(Path dir) throws Exception {
        SecureRandom random = new SecureRandom();
        KeyPair caKeys = ecKeys(random);
        KeyPair serverKeys = ecKeys(random);
        Instant now = Instant.now();
        Date from = Date.from(now.minus(Duration.ofHours(1)));
        Date to = Date.from(now.plus(Duration.ofDays(2)));
        JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();

        X500Name caName = new X500Name("CN=hicache-test-ca");
        X509CertificateHolder caCert = new JcaX509v3CertificateBuilder(caName, new BigInteger(64, random), from, to,
                caName, caKeys.getPublic())
                .addExtension(Extension.basicConstraints, true, new BasicConstraints(true))
                .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                .addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(caKeys.getPublic()))
                .build(signer(caKeys));

        X509CertificateHolder serverCert = new JcaX509v3CertificateBuilder(caName, new BigInteger(64, random), from,
                to, new X500Name("CN=127.0.0.1"), serverKeys.getPublic())
                .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature))
                .addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth))
                .addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[] {
                        new GeneralName(GeneralName.iPAddress, "127.0.0.1"),
                        new GeneralName(GeneralName.dNSName, "localhost")}))
                .addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(caCert))
                .build(signer(caKeys));

        TlsFiles files = new TlsFiles(dir.resolve("ca.crt"), dir.resolve("server.crt"), dir.resolve("server.key"));
        pem(files.ca(), caCert);
        pem(files.cert(), serverCert);
        pem(files.key(), new JcaPKCS8Generator(serverKeys.getPrivate(), null));
        return files;
    }

    private static KeyPair ecKeys(SecureRandom random) throws Exception {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(new ECGenParameterSpec("secp256r1"), random);
        return g.generateKeyPair();
    }

    private static org.bouncycastle.operator.ContentSigner signer(KeyPair keys) throws Exception {
        return new JcaContentSignerBuilder("SHA256withECDSA").build(keys.getPrivate());
    }

    private static void pem(Path file, Object object) throws IOException {
        try (Writer w = Files.newBufferedWriter(file); JcaPEMWriter pem = new JcaPEMWriter(w)) {
            pem.writeObject(object);
        }
    }
}
