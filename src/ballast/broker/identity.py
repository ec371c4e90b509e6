"""Who a broker is, as others reach it: its id (``host:port`` of its web service, as Pulsar
names brokers), URLs and capabilities. The registry record and ownership records carry these."""

from __future__ import annotations

from dataclasses import dataclass

from ballast import __version__
from ballast.coordination.ownership import OwnershipData
from ballast.model.loaddata import LocalBrokerData


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    host: str
    web_port: int
    broker_port: int
    persistent_topics: bool = True
    non_persistent_topics: bool = True
    version: str = __version__
    load_manager: str = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"

    @property
    def broker_id(self) -> str:
        return f"{self.host}:{self.web_port}"

    @property
    def web_service_url(self) -> str:
        return f"http://{self.host}:{self.web_port}"

    @property
    def pulsar_service_url(self) -> str:
        return f"pulsar://{self.host}:{self.broker_port}"

    def base_report(self) -> LocalBrokerData:
        """The broker's report before any load is known: lookup data and capabilities."""
        return LocalBrokerData(
            web_service_url=self.web_service_url,
            pulsar_service_url=self.pulsar_service_url,
            persistent_topics_enabled=self.persistent_topics,
            non_persistent_topics_enabled=self.non_persistent_topics,
            broker_version_string=self.version,
            load_manager_class_name=self.load_manager,
        )

    def ownership_template(self) -> OwnershipData:
        return OwnershipData(
            native_url=self.pulsar_service_url,
            http_url=self.web_service_url,
            broker_id=self.broker_id,
        )


def identity_from_id(broker_id: str, broker_port: int | None = None) -> BrokerIdentity:
    """An identity from a ``host:port`` id (the binary port defaults to web port - 1430, so
    8080 pairs with 6650 as in Pulsar's defaults)."""
    host, _, port = broker_id.rpartition(":")
    web_port = int(port)
    return BrokerIdentity(host, web_port, broker_port if broker_port else web_port - 1430)
