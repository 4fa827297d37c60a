"""The serving certificate: a private CA made on first start and a server cert it signs.

Clients verify the server with the CA that the written kubeconfigs carry as
``certificate-authority-data``, so Go drivers, kubectl and the Python client talk HTTPS with
verification on. The CA lives in the data dir when there is one, so kubeconfigs written
before a restart keep working; the serving cert is reissued on every start for the current hosts.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Iterable
from pathlib import Path

import attrs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubelet_dra.peers.apiserver.secretfiles import write_private
from kubelet_dra.peers.errors import StateError

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
CA_VALIDITY = datetime.timedelta(days=3650)
SERVING_VALIDITY = datetime.timedelta(days=365)
CLOCK_SKEW = datetime.timedelta(minutes=5)


@attrs.frozen
class Certificates:
    """Paths of the CA and serving key pair, plus the CA in PEM for kubeconfigs."""

    ca_cert_path: Path
    ca_cert_pem: bytes
    cert_path: Path
    key_path: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_path, self.key_path)
        return context


def ensure_certificates(directory: Path, hosts: Iterable[str]) -> Certificates:
    """Load or create the CA in ``directory`` and issue a serving cert for loopback plus ``hosts``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert_path, ca_key_path = directory / "ca.crt", directory / "ca.key"
    if ca_cert_path.exists() and ca_key_path.exists():
        ca_cert, ca_key = _load_ca(ca_cert_path, ca_key_path)
    else:
        ca_cert, ca_key = _new_ca()
        write_private(ca_key_path, _key_pem(ca_key))
        ca_cert_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _serving_cert(ca_cert, ca_key, key, [*LOOPBACK_HOSTS, *hosts])
    cert_path, key_path = directory / "apiserver.crt", directory / "apiserver.key"
    write_private(key_path, _key_pem(key))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return Certificates(ca_cert_path, ca_cert_path.read_bytes(), cert_path, key_path)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _load_ca(cert_path: Path, key_path: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (OSError, ValueError) as err:
        raise StateError(
            f"cannot load the API server's CA: {err}",
            where=str(cert_path),
            fix="delete ca.crt and ca.key to make a new CA",
        ) from err
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise StateError("the CA key is not an EC key", where=str(key_path), fix="delete ca.crt and ca.key")
    return cert, key


def _new_ca() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubelet-dra-apiserver-ca")])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _serving_cert(
    ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, key: ec.EllipticCurvePrivateKey, hosts: list[str]
) -> x509.Certificate:
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    now = _now()
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubelet-dra-apiserver")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + SERVING_VALIDITY)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
