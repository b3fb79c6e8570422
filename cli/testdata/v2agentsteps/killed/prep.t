prep
